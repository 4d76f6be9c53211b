"""AllGather with LL packets: rank r writes its input as
packets into every peer's scratch slot r (put_packets), and unpacks every peer's slot into its
output; no signal is needed, packets carry their own flags."""

import argparse

from mscclpp.language.channel import *
from mscclpp.language.collectives import *
from mscclpp.language.general import *
from mscclpp.language.program import *
from mscclpp.language.rank import *

parser = argparse.ArgumentParser()
parser.add_argument("--num_gpus", type=int, default=4)
parser.add_argument("--instances", type=int, default=1)
args = parser.parse_args()
n = args.num_gpus

with CollectiveProgram("allgather_packets", AllGather(n, 1, False), n, protocol="LL",
                       instances=args.instances):
    scratch = [Buffer(r, n) for r in range(n)]
    for r in range(n):
        rank = Rank(r)
        src = rank.get_input_buffer()[0:1]
        for p in range(n):
            if p != r:
                MemoryChannel(p, r).put_packets(scratch[p][r:r + 1], src, tb=0)
        rank.copy(rank.get_output_buffer()[r:r + 1], src, tb=1)
        for p in range(n):
            if p != r:
                rank.unpack_packets(rank.get_output_buffer()[p:p + 1], scratch[r][p:p + 1],
                                    tb=1)
    print(JSON())
