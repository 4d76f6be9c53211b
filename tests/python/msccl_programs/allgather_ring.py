# Ring AllGather (out of place). Each rank's input has CHANNELS chunks; chunk c of every
# rank travels the ring on channel c.
# Run: allgather_ring.py NUM_GPUS CHANNELS INSTANCES [--protocol Simple|LL|LL128]

import argparse

from msccl.language import *
from msccl.topologies import *
from msccl.language.collectives import AllGather


def allgather_ring(size, channels, instances, protocol):
    topology = ring(size)
    collective = AllGather(size, channels, False)
    with MSCCLProgram("allgather_ring", topology, collective, instances, protocol=protocol):
        for r in range(size):
            for c in range(channels):
                index = r * channels + c
                here = chunk(r, Buffer.input, c).copy(r, Buffer.output, index)
                for step in range(1, size):
                    here = here.copy((r + step) % size, Buffer.output, index, ch=c)
        Check()
        XML()


parser = argparse.ArgumentParser()
parser.add_argument("num_gpus", type=int, help="number of gpus")
parser.add_argument("channels", type=int, help="chunks per rank, one channel each")
parser.add_argument("instances", type=int, help="number of instances")
parser.add_argument("--protocol", type=str, default="Simple", choices=["Simple", "LL", "LL128"])
args = parser.parse_args()
allgather_ring(args.num_gpus, args.channels, args.instances, args.protocol)
