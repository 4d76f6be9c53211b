# Rejected: a copy between ranks the ring topology does not link (msccl-tools asserts
# topo.link(src, dst)).
# Run: unlinked_copy.py

from msccl.language import *
from msccl.topologies import *
from msccl.language.collectives import AllGather

size = 4
with MSCCLProgram("unlinked_copy", ring(size), AllGather(size, 1, True), 1):
    for r in range(size):
        c = chunk(r, Buffer.input, 0)
        for peer in range(size):
            if peer != r:
                c.copy(peer, Buffer.output, r)  # expect-error: no link from rank 0 to rank 2
    XML()
