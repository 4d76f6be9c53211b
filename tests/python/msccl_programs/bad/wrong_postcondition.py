# Rejected: a ring AllReduce that forgets the last all-gather hop. Check() prints the wrong
# chunks and returns False; XML() then fails (msccl-tools would still print XML).
# Run: wrong_postcondition.py

from msccl.language import *
from msccl.topologies import *
from msccl.language.collectives import AllReduce

size = 3
with MSCCLProgram("wrong_postcondition", ring(size), AllReduce(size, size, True), 1):
    for index in range(size):
        c = chunk(index, Buffer.input, index)
        for step in range(1, size):
            c = chunk((index + step) % size, Buffer.input, index).reduce(c)
        for step in range(size - 2):  # one hop short of size - 1
            c = c.copy((index + step) % size, Buffer.input, index)
    if not Check():
        print("Check() returned False")
    XML()  # expect-error: does not implement allreduce
