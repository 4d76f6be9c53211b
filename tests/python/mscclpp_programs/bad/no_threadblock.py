"""A copy given neither tb nor tb_group."""
from mscclpp.language.general import *
from mscclpp.language.program import *
from mscclpp.language.rank import *

with CollectiveProgram("no_threadblock", AllReduce(2, 2, True), 2):
    rank = Rank(0)
    buf = rank.get_input_buffer()
    rank.copy(rank.get_output_buffer()[0:1], buf[1:2])  # expect-error: RuntimeError: Either 'tb'
    print(JSON())
