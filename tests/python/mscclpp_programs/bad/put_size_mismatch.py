"""A put whose destination is smaller than its source."""
from mscclpp.language.channel import *
from mscclpp.language.general import *
from mscclpp.language.program import *
from mscclpp.language.rank import *

with CollectiveProgram("put_size_mismatch", AllGather(2, 2, False), 2):
    ch = MemoryChannel(1, 0)
    dst = Rank(1).get_output_buffer()[0:1]
    ch.put(dst, Rank(0).get_input_buffer()[0:2], tb=0)  # expect-error: RuntimeError: does not match source chunk size
    print(JSON())
