# All-pairs ReduceScatter: rank r sends its chunk q to rank q's scratch (Buffer.scratch used
# as a named buffer, index r); rank q copies its own chunk q to its output and reduces the
# received ones into it (the input of an out-of-place collective stays unchanged).
# Run: reducescatter_allpairs.py NUM_GPUS INSTANCES

import argparse

from msccl.language import *
from msccl.topologies import *
from msccl.language.collectives import ReduceScatter


def reducescatter_allpairs(size, instances):
    topology = fully_connected(size)
    collective = ReduceScatter(size, 1, False)
    with MSCCLProgram("reducescatter_allpairs", topology, collective, instances):
        for r in range(size):
            for q in range(size):
                if q != r:
                    chunk(r, Buffer.input, q).copy(q, Buffer.scratch, r)
        for q in range(size):
            c = chunk(q, Buffer.input, q).copy(q, Buffer.output, 0)
            for r in range(size):
                if r != q:
                    c.reduce(chunk(q, Buffer.scratch, r))
        Check()
        XML()


parser = argparse.ArgumentParser()
parser.add_argument("num_gpus", type=int, help="number of gpus")
parser.add_argument("instances", type=int, help="number of instances")
args = parser.parse_args()
reducescatter_allpairs(args.num_gpus, args.instances)
