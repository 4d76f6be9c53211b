"""Loops do not nest."""
from mscclpp.language.general import *
from mscclpp.language.loop import *
from mscclpp.language.program import *
from mscclpp.language.rank import *

with CollectiveProgram("nested_loop", AllReduce(2, 2, True), 2):
    with LoopIterationContext(unit=1024, num_chunks=2):
        with LoopIterationContext(unit=512, num_chunks=2):  # expect-error: RuntimeError: Nested Pipelines
            pass
    print(JSON())
