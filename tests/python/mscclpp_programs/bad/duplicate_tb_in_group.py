"""A threadblock group listing a threadblock twice."""
from mscclpp.language.program import *
from mscclpp.language.thread_block_group import ThreadBlockGroup

with CollectiveProgram("duplicate_tb_in_group", AllReduce(2, 2, True), 2):
    group = ThreadBlockGroup(tb_list=[0, 1, 0])  # expect-error: ValueError: Duplicate thread block
