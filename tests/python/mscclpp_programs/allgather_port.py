"""AllGather over port channels: put_with_signal_and_flush into every peer's output, a wait
per peer; the local chunk is copied by another threadblock."""

import argparse

from mscclpp.language.channel import *
from mscclpp.language.collectives import *
from mscclpp.language.general import *
from mscclpp.language.program import *
from mscclpp.language.rank import *

parser = argparse.ArgumentParser()
parser.add_argument("--num_gpus", type=int, default=3)
args = parser.parse_args()
n = args.num_gpus

with CollectiveProgram("allgather_port", AllGather(n, 1, False), n, protocol="Simple"):
    channels = {(r, p): PortChannel(p, r) for r in range(n) for p in range(n) if p != r}
    for r in range(n):
        rank = Rank(r)
        src = rank.get_input_buffer()[0:1]
        rank.copy(rank.get_output_buffer()[r:r + 1], src, tb=1)
        for p in range(n):
            if p != r:
                channels[(r, p)].put_with_signal_and_flush(
                    Rank(p).get_output_buffer()[r:r + 1], src, tb=0)
        for p in range(n):
            if p != r:
                channels[(r, p)].wait(tb=0, data_sync=SyncType.after)
    print(JSON())
