# Rejected: under the manual threadblock policy, threadblock 0 of each rank would send to
# two peers (msccl-tools raises "Illegal threadblock assignment").
# Run: manual_tb_conflict.py

from msccl.language import *
from msccl.topologies import *
from msccl.language.collectives import AllToAll

size = 3
with MSCCLProgram("manual_tb_conflict", fully_connected(size), AllToAll(size, 1, False), 1,
                  threadblock_policy=ThreadblockPolicy.manual):
    for r in range(size):
        for index in range(size):
            c = chunk(r, Buffer.input, index)
            c.copy(index, Buffer.output, r, sendtb=0, recvtb=1)  # expect-error: no channel fits
    XML()
