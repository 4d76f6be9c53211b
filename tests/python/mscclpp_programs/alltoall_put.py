"""Out-of-place AllToAll: rank r copies input[r] to output[r] and puts input[p] into peer p's
output[r]; a signal after the puts, a wait for every peer."""

import argparse

from mscclpp.language.channel import *
from mscclpp.language.collectives import *
from mscclpp.language.general import *
from mscclpp.language.program import *
from mscclpp.language.rank import *

parser = argparse.ArgumentParser()
parser.add_argument("--num_gpus", type=int, default=4)
parser.add_argument("--chunks", type=int, default=2)
args = parser.parse_args()
n, c = args.num_gpus, args.chunks

with CollectiveProgram("alltoall_put", AllToAll(n, c, False), n, protocol="Simple"):
    channels = {(r, p): MemoryChannel(p, r) for r in range(n) for p in range(n) if p != r}
    for r in range(n):
        rank = Rank(r)
        inp, out = rank.get_input_buffer(), rank.get_output_buffer()
        rank.copy(out[r * c:(r + 1) * c], inp[r * c:(r + 1) * c], tb=0)
        for p in range(n):
            if p != r:
                peer_out = Rank(p).get_output_buffer()
                for k in range(c):  # one put per chunk: fused into one multi-chunk put
                    channels[(r, p)].put(peer_out[r * c + k:r * c + k + 1],
                                         inp[p * c + k:p * c + k + 1], tb=0)
        for p in range(n):
            if p != r:
                channels[(r, p)].signal(tb=0, data_sync=SyncType.before)
        for p in range(n):
            if p != r:
                channels[(r, p)].wait(tb=0, data_sync=SyncType.after)
    print(JSON())
