# AllReduce by vector halving / distance doubling reduce-scatter, then vector doubling /
# distance halving all-gather. Manual threadblocks: on every rank, threadblock p talks to
# rank p. NUM_GPUS must be a power of two.
# Run: allreduce_recursive_doubling_halving.py NUM_GPUS INSTANCES [--protocol P]

import argparse

from msccl.language import *
from msccl.topologies import *
from msccl.language.collectives import AllReduce


def reduce_scatter_vector_halving(size):
    count = size // 2
    while count >= 1:
        for rank in range(size):
            peer = rank ^ count
            index = (peer // count) * count
            mine = chunk(rank, Buffer.input, index, size=count)
            chunk(peer, Buffer.output, index, size=count).reduce(
                mine, sendtb=peer, recvtb=rank, ch=0)
        count //= 2


def allgather_vector_doubling(size):
    count = 1
    while count < size:
        for rank in range(size):
            peer = rank ^ count
            index = (rank // count) * count
            chunk(rank, Buffer.output, index, size=count).copy(
                peer, Buffer.output, index, sendtb=peer, recvtb=rank, ch=0)
        count *= 2


def allreduce(size, instances, protocol):
    topology = fully_connected(size)
    collective = AllReduce(size, size, True)
    with MSCCLProgram("allreduce_recursive_doubling_halving", topology, collective, instances,
                      protocol, interleaved_replication=False,
                      threadblock_policy=ThreadblockPolicy.manual):
        reduce_scatter_vector_halving(size)
        allgather_vector_doubling(size)
        Check()
        XML()


parser = argparse.ArgumentParser()
parser.add_argument("num_gpus", type=int, help="number of gpus (a power of two)")
parser.add_argument("instances", type=int, help="number of instances")
parser.add_argument("--protocol", type=str, default="LL", choices=["Simple", "LL", "LL128"])
args = parser.parse_args()
allreduce(args.num_gpus, args.instances, args.protocol)
