# All-pairs AllToAll: every chunk is copied straight to its destination.
# Run: alltoall_allpairs.py NUM_GPUS INSTANCES [--protocol Simple|LL|LL128]

import argparse

from msccl.language import *
from msccl.topologies import *
from msccl.language.collectives import AllToAll


def alltoall_allpairs(size, instances, protocol):
    topology = fully_connected(size)
    collective = AllToAll(size, 1, False)
    with MSCCLProgram("alltoall_allpairs", topology, collective, instances, protocol=protocol):
        for r in range(size):
            for index in range(size):
                c = chunk(r, Buffer.input, index)
                c.copy(c.get_dst_rank(), Buffer.output, c.get_dst_index())
        Check()
        XML()


parser = argparse.ArgumentParser()
parser.add_argument("num_gpus", type=int, help="number of gpus")
parser.add_argument("instances", type=int, help="number of instances")
parser.add_argument("--protocol", type=str, default="Simple", choices=["Simple", "LL", "LL128"])
args = parser.parse_args()
alltoall_allpairs(args.num_gpus, args.instances, args.protocol)
