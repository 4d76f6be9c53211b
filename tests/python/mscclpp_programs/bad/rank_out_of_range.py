"""A rank the program does not have (MSCCL++ raises an AttributeError here too)."""
from mscclpp.language.general import *
from mscclpp.language.program import *
from mscclpp.language.rank import *

with CollectiveProgram("rank_out_of_range", AllReduce(2, 1, True), 2):
    rank = Rank(2)  # expect-error: AttributeError: Rank 2 is out of bounds
    print(JSON())
