# Rejected: copies a reference whose second chunk was never written (msccl-tools fails with
# an assertion while building its instruction DAG). The error names the line marked below.
# Run: uninitialized_chunk.py

from msccl.language import *
from msccl.topologies import *
from msccl.language.collectives import AllGather

with MSCCLProgram("uninitialized_chunk", fully_connected(2), AllGather(2, 1, False), 1):
    chunk(0, Buffer.input, 0).copy(0, Buffer.output, 0)
    c = chunk(0, Buffer.output, 0, 2)  # output[1] of rank 0 is still empty
    c.copy(1, Buffer.output, 0)  # expect-error: rank 0 output[1] is empty
    XML()
