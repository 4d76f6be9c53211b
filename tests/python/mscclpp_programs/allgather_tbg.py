"""AllGather with a ThreadBlockGroup: each rank's puts of its (several-chunk) input are split
across the threadblocks of a group; a barrier then lets threadblock 0 signal the peers."""

import argparse

from mscclpp.language.channel import *
from mscclpp.language.collectives import *
from mscclpp.language.general import *
from mscclpp.language.program import *
from mscclpp.language.rank import *
from mscclpp.language.thread_block_group import ThreadBlockGroup

parser = argparse.ArgumentParser()
parser.add_argument("--num_gpus", type=int, default=4)
parser.add_argument("--chunks", type=int, default=4)
parser.add_argument("--group", type=int, default=2)
args = parser.parse_args()
n, c = args.num_gpus, args.chunks

with CollectiveProgram("allgather_tbg", AllGather(n, c, True), n, protocol="Simple"):
    group = ThreadBlockGroup(tb_list=list(range(args.group)))
    channels = {(r, p): MemoryChannel(p, r) for r in range(n) for p in range(n) if p != r}
    for r in range(n):
        rank = Rank(r)
        mine = rank.get_output_buffer()[r * c:(r + 1) * c]  # in place: the input is here
        for p in range(n):
            if p != r:
                dst = Rank(p).get_output_buffer()[r * c:(r + 1) * c]
                channels[(r, p)].put(dst, mine, tb_group=group)
        rank.barrier(tb_list=group.tb_list)
        for p in range(n):
            if p != r:
                channels[(r, p)].signal(tb=0, data_sync=SyncType.none)
        for p in range(n):
            if p != r:
                channels[(r, p)].wait(tb=0, data_sync=SyncType.after)
    print(JSON())
