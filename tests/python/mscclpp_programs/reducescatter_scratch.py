"""Out-of-place ReduceScatter: rank r puts input[p] into peer p's scratch slot for r; after
waiting for every peer, rank p reduces its own input[p] with the received slots into output."""

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

with CollectiveProgram("reducescatter_scratch", ReduceScatter(n, 1, False), n,
                       protocol="Simple"):
    scratch = [Buffer(r, n) for r in range(n)]  # slot q of rank r: the chunk rank q sent
    channels = {(r, p): MemoryChannel(p, r) for r in range(n) for p in range(n) if p != r}
    for r in range(n):
        inp = Rank(r).get_input_buffer()
        for p in range(n):
            if p != r:
                channels[(r, p)].put(scratch[p][r:r + 1], inp[p:p + 1], tb=0)
                channels[(r, p)].signal(tb=0, data_sync=SyncType.before)
    for r in range(n):
        for p in range(n):
            if p != r:
                channels[(r, p)].wait(tb=0, data_sync=SyncType.after)
        rank = Rank(r)
        others = [scratch[r][p:p + 1] for p in range(n) if p != r]
        rank.reduce(rank.get_input_buffer()[r:r + 1], others, tb=0,
                    dst_chunk=rank.get_output_buffer()[0:1])
    print(JSON())
