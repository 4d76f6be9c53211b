# Ring AllReduce with manual threadblocks and channels, on a ring topology.
# Chunk i is reduced around the ring starting at rank i, then the sum travels on around it.
# Chunks are spread over `channels` threadblocks (tb = channel = i % channels).
# Run: allreduce_ring_manual.py NUM_GPUS CHANNELS INSTANCES [--protocol Simple|LL|LL128]

import argparse

from msccl.language import *
from msccl.topologies import *
from msccl.language.collectives import AllReduce


def allreduce_ring(num_gpus, channels, instances, protocol):
    topology = ring(num_gpus)
    collective = AllReduce(num_gpus, num_gpus, True)
    with MSCCLProgram(f"allreduce_ring_{channels}ch", topology, collective, instances,
                      protocol=protocol, threadblock_policy=ThreadblockPolicy.manual):
        for index in range(num_gpus):
            tb = index % channels
            # Reduce: rank index, index+1, ... each add their copy of chunk `index`.
            for step in range(num_gpus - 1):
                here = (index + step) % num_gpus
                there = (index + step + 1) % num_gpus
                chunk(there, Buffer.input, index).reduce(
                    chunk(here, Buffer.input, index), sendtb=tb, recvtb=tb, ch=tb)
            # Broadcast the sum from rank index-1 around the ring.
            c = chunk((index - 1) % num_gpus, Buffer.input, index)
            for step in range(num_gpus - 1):
                c = c.copy((index + step) % num_gpus, Buffer.input, index,
                           sendtb=tb, recvtb=tb, ch=tb)
        Check()
        XML()


parser = argparse.ArgumentParser()
parser.add_argument("num_gpus", type=int, help="number of gpus")
parser.add_argument("channels", type=int, help="threadblocks/channels per ring")
parser.add_argument("instances", type=int, help="number of instances")
parser.add_argument("--protocol", type=str, default="Simple", choices=["Simple", "LL", "LL128"])
args = parser.parse_args()
allreduce_ring(args.num_gpus, args.channels, args.instances, args.protocol)
