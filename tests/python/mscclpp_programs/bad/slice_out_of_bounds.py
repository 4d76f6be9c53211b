"""A slice past the end of a buffer."""
from mscclpp.language.general import *
from mscclpp.language.program import *
from mscclpp.language.rank import *

with CollectiveProgram("slice_out_of_bounds", AllReduce(2, 1, True), 2):
    buf = Rank(0).get_input_buffer()
    chunk = buf[1:3]  # expect-error: RuntimeError: out of bounds
    print(JSON())
