"""AllGather through scratch, with two threadblocks per rank joined by a semaphore:
threadblock 0 puts the input into slot r of every peer's scratch, signals, and waits for every
peer's put, then releases the semaphore; threadblock 1 copies the input into the output,
acquires the semaphore and copies every received slot into the output."""

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

with CollectiveProgram("allgather_semaphore", AllGather(n, 1, False), n, protocol="Simple"):
    scratch = [Buffer(r, n) for r in range(n)]
    ready = [Semaphore(r, 0) for r in range(n)]
    channels = {(r, p): MemoryChannel(p, r) for r in range(n) for p in range(n) if p != r}
    for r in range(n):
        rank = Rank(r)
        src = rank.get_input_buffer()[0:1]
        out = rank.get_output_buffer()
        for p in range(n):
            if p != r:
                channels[(r, p)].put(scratch[p][r:r + 1], src, tb=0)
        for p in range(n):
            if p != r:
                channels[(r, p)].signal(tb=0, data_sync=SyncType.before)
        for p in range(n):
            if p != r:
                channels[(r, p)].wait(tb=0, data_sync=SyncType.after)
        ready[r].release(tb=0)
        rank.copy(out[r:r + 1], src, tb=1)
        ready[r].acquire(tb=1)
        for p in range(n):
            if p != r:
                rank.copy(out[p:p + 1], scratch[r][p:p + 1], tb=1)
    print(JSON())
