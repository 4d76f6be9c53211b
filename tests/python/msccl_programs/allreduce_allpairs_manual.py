# All-pairs AllReduce with manual threadblocks: rank r's copy to rank q runs on send
# threadblock q and receive threadblock r, and each rank spreads its local reductions over
# threadblocks chosen by index, some of which no copy uses (they hold only local steps).
# Run: allreduce_allpairs_manual.py NUM_GPUS INSTANCES [--protocol Simple|LL|LL128]

import argparse

from msccl.language import *
from msccl.topologies import *
from msccl.language.collectives import AllReduce


def allreduce_allpairs_manual(size, instances, protocol):
    topology = fully_connected(size)
    collective = AllReduce(size, size, True)
    with MSCCLProgram("allreduce_allpairs_manual", topology, collective, instances,
                      protocol=protocol, threadblock_policy=ThreadblockPolicy.manual):
        # Scatter: rank r's chunk q lands in rank q's scratch at index r.
        for r in range(size):
            for q in range(size):
                if q != r:
                    chunk(r, Buffer.input, q).copy(q, "scratch", r, sendtb=q, recvtb=r)
        # Local reduction on each rank q, on threadblock size + r: none of the copies use it.
        for q in range(size):
            for r in range(size):
                if r != q:
                    chunk(q, Buffer.input, q).reduce(chunk(q, "scratch", r), sendtb=size + r)
        # All-gather the sums.
        for q in range(size):
            for r in range(size):
                if r != q:
                    chunk(q, Buffer.input, q).copy(r, Buffer.input, q, sendtb=r, recvtb=q)
        Check()
        XML()


parser = argparse.ArgumentParser()
parser.add_argument("num_gpus", type=int, help="number of gpus")
parser.add_argument("instances", type=int, help="number of instances")
parser.add_argument("--protocol", type=str, default="LL", choices=["Simple", "LL", "LL128"])
args = parser.parse_args()
allreduce_allpairs_manual(args.num_gpus, args.instances, args.protocol)
