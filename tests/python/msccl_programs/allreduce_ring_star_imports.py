# Ring AllReduce in place with every msccl-tools module star-imported, the synthesis
# collectives (msccl.collectives) among them, before msccl.language.collectives' AllReduce.
# Run: allreduce_ring_star_imports.py NUM_GPUS INSTANCES

import argparse

from msccl.language import *
from msccl.topologies import *
from msccl.collectives import *
from msccl.language.collectives import AllReduce


def allreduce_ring(size, instances):
    collective = AllReduce(size, size, inplace=True)
    with MSCCLProgram("allreduce_ring_star_imports", fully_connected(size), collective,
                      instances):
        for r in range(size):
            # Reduce chunk r around the ring, ending on rank r - 1 ...
            c = chunk(r, Buffer.input, r)
            for hop in range(1, size):
                c = chunk((r + hop) % size, buffer=Buffer.input, index=r).reduce(c)
            # ... then carry the sum on around to the ranks that lack it.
            for hop in range(size, 2 * size - 1):
                c = c.copy((r + hop) % size, buffer=Buffer.input, index=r)
        Check()
        XML()


parser = argparse.ArgumentParser()
parser.add_argument("num_gpus", type=int, help="number of gpus")
parser.add_argument("instances", type=int, help="number of instances")
args = parser.parse_args()
allreduce_ring(args.num_gpus, args.instances)
