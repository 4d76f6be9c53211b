# Recursive-doubling AllGather: after step k every rank holds its aligned block of 2^k
# chunks; NUM_GPUS must be a power of two.
# Run: allgather_recursive_doubling.py NUM_GPUS INSTANCES

import argparse

from msccl.language import *
from msccl.topologies import *
from msccl.language.collectives import AllGather


def allgather_recursive_doubling(size, instances):
    topology = fully_connected(size)
    collective = AllGather(size, 1, False)
    with MSCCLProgram("allgather_recursive_doubling", topology, collective, instances):
        for r in range(size):
            chunk(r, Buffer.input, 0).copy(r, Buffer.output, r)
        count = 1
        while count < size:
            for r in range(size):
                peer = r ^ count
                index = (r // count) * count
                chunk(r, Buffer.output, index, count).copy(peer, Buffer.output, index)
            count *= 2
        Check()
        XML()


parser = argparse.ArgumentParser()
parser.add_argument("num_gpus", type=int, help="number of gpus (a power of two)")
parser.add_argument("instances", type=int, help="number of instances")
args = parser.parse_args()
allgather_recursive_doubling(args.num_gpus, args.instances)
