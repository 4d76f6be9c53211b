# All-pairs AllReduce: every rank scatters chunk q to rank q's named scratch buffer
# "scratch", rank q reduces what it received into its input, then sends the sum to everyone.
# Run: allreduce_allpairs.py NUM_GPUS INSTANCES [--protocol Simple|LL|LL128]

import argparse

from msccl.language import *
from msccl.topologies import *
from msccl.language.collectives import AllReduce


def allreduce_allpairs(size, instances, protocol):
    topology = fully_connected(size)
    collective = AllReduce(size, size, True)
    with MSCCLProgram("allreduce_allpairs", topology, collective, instances, protocol=protocol):
        # Scatter: rank r's chunk q lands in rank q's scratch at index r.
        for r in range(size):
            for q in range(size):
                if q != r:
                    chunk(r, Buffer.input, q).copy(q, "scratch", r)
        # Local reduction on each rank q.
        for q in range(size):
            c = chunk(q, Buffer.input, q)
            for r in range(size):
                if r != q:
                    c = c.reduce(chunk(q, "scratch", r))
        # All-gather the sums.
        for q in range(size):
            for r in range(size):
                if r != q:
                    chunk(q, Buffer.input, q).copy(r, Buffer.input, q)
        Check()
        XML()


parser = argparse.ArgumentParser()
parser.add_argument("num_gpus", type=int, help="number of gpus")
parser.add_argument("instances", type=int, help="number of instances")
parser.add_argument("--protocol", type=str, default="Simple", choices=["Simple", "LL", "LL128"])
args = parser.parse_args()
allreduce_allpairs(args.num_gpus, args.instances, args.protocol)
