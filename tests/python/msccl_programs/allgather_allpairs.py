# All-pairs AllGather, in place: each rank's input is its window of the output, so one
# direct copy per peer suffices.
# Run: allgather_allpairs.py NUM_GPUS INSTANCES

import argparse

from msccl.language import *
from msccl.topologies import *
from msccl.language.collectives import AllGather


def allgather_allpairs(size, instances):
    topology = fully_connected(size)
    collective = AllGather(size, 1, True)
    with MSCCLProgram("allgather_allpairs", topology, collective, instances):
        for r in range(size):
            c = chunk(r, Buffer.input, 0)  # aliases output[r]
            for peer in range(size):
                if peer != r:
                    c.copy(peer, Buffer.output, r)
        Check()
        XML()


parser = argparse.ArgumentParser()
parser.add_argument("num_gpus", type=int, help="number of gpus")
parser.add_argument("instances", type=int, help="number of instances")
args = parser.parse_args()
allgather_allpairs(args.num_gpus, args.instances)
