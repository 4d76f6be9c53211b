"""A signal no wait matches: refused when the plan is written."""
from mscclpp.language.channel import *
from mscclpp.language.general import *
from mscclpp.language.program import *
from mscclpp.language.rank import *

with CollectiveProgram("signal_without_wait", AllReduce(2, 1, True), 2):
    MemoryChannel(1, 0).signal(tb=0)
    MemoryChannel(0, 1)
    print(JSON())  # expect-error: RuntimeError: Signal/Wait mismatch
