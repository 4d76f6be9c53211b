# Ring AllReduce with automatic threadblock assignment (msccl-tools' simple tutorial shape,
# its imports too: the synthesis collectives of msccl.collectives are star-imported before
# msccl.language.collectives' AllReduce).
# Run: allreduce_ring_auto.py NUM_GPUS INSTANCES

import argparse

from msccl.language import *
from msccl.topologies import *
from msccl.collectives import *
from msccl.language.collectives import AllReduce


def allreduce_ring(size, instances):
    topology = fully_connected(size)
    collective = AllReduce(size, size, inplace=True)
    with MSCCLProgram("allreduce_ring_auto", topology, collective, instances):
        for r in range(size):
            index = r
            # Reduce chunk r around the ring: it ends fully reduced on rank r-1.
            c = chunk(r, Buffer.input, index)
            for step in range(1, size):
                nxt = (r + step) % size
                c = chunk(nxt, Buffer.input, index).reduce(c)
            # Copy the result to every other rank.
            for step in range(0, size - 1):
                nxt = (r + step) % size
                c = c.copy(nxt, Buffer.input, index)
        Check()
        XML()


parser = argparse.ArgumentParser()
parser.add_argument("num_gpus", type=int, help="number of gpus")
parser.add_argument("instances", type=int, help="number of instances")
args = parser.parse_args()
allreduce_ring(args.num_gpus, args.instances)
