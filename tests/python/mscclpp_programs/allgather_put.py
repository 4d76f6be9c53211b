"""Out-of-place AllGather: rank r copies its input into output[r] and puts it into every
peer's output[r] (one threadblock per peer), then signals; each rank waits for every peer."""

import argparse

from mscclpp.language.channel import *
from mscclpp.language.collectives import *
from mscclpp.language.general import *
from mscclpp.language.program import *
from mscclpp.language.rank import *

parser = argparse.ArgumentParser()
parser.add_argument("--num_gpus", type=int, default=4)
args = parser.parse_args()
n = args.num_gpus

with CollectiveProgram("allgather_put", AllGather(n, 1, False), n, protocol="Simple"):
    # One channel per ordered pair: rank r's channel to p is paired with p's channel to r.
    channels = {(r, p): MemoryChannel(p, r) for r in range(n) for p in range(n) if p != r}

    def tb_for(r, p):
        return p if p < r else p - 1  # one threadblock per peer

    for r in range(n):
        rank = Rank(r)
        src = rank.get_input_buffer()[0:1]
        rank.copy(rank.get_output_buffer()[r:r + 1], src, tb=0)
        for p in range(n):
            if p != r:
                channels[(r, p)].put(Rank(p).get_output_buffer()[r:r + 1], src, tb=tb_for(r, p))
                channels[(r, p)].signal(tb=tb_for(r, p), data_sync=SyncType.before)
    for r in range(n):
        for p in range(n):
            if p != r:
                channels[(r, p)].wait(tb=tb_for(r, p), data_sync=SyncType.after)
    print(JSON())
