# Rejected: an input index past the end of the buffer (msccl-tools raises IndexError).
# Run: out_of_range_index.py

from msccl.language import *
from msccl.topologies import *
from msccl.language.collectives import AllReduce

with MSCCLProgram("out_of_range_index", fully_connected(4), AllReduce(4, 4, True), 1):
    for r in range(4):
        c = chunk(r, Buffer.input, r + 1)  # expect-error: rank 3 input[4] is out of range
        c.copy((r + 1) % 4, Buffer.input, r + 1)
    XML()
