"""The collectives a program implements: buffer sizes per rank, name and in-place flag."""

from .internal.types import BufferType
from .rank import BaseBuffer

__all__ = ["Collective", "TestCollective", "AllGather", "AllReduce", "ReduceScatter", "AllToAll",
           "SendRecv", "BaseBuffer", "BufferType"]


class Collective:
    """Base class: ``num_ranks`` ranks, ``chunk_factor`` chunks per rank's share, ``inplace``.
    A subclass defines ``init_buffers()`` (MSCCL++'s base class returns None, and a program
    built on it fails with a TypeError, here too)."""

    def __init__(self, num_ranks, chunk_factor, inplace):
        self.num_ranks = num_ranks
        self.chunk_factor = chunk_factor
        self.inplace = inplace
        self.name = "custom"

    def init_buffers(self):
        return None

    def check(self, prog):
        return None

    def _sized(self, input_size, output_size):
        return [{BufferType.input: BaseBuffer(rank, BufferType.input, 0, input_size),
                 BufferType.output: BaseBuffer(rank, BufferType.output, 0, output_size)}
                for rank in range(self.num_ranks)]


class TestCollective(Collective):
    """Input of ``input_size`` and output of ``output_size`` chunks on every rank (name "test")."""

    def __init__(self, num_ranks, input_size, output_size):
        Collective.__init__(self, num_ranks, 1, False)
        self.name = "test"
        self.input_size = input_size
        self.output_size = output_size

    def init_buffers(self):
        return self._sized(self.input_size, self.output_size)


class AllGather(Collective):
    """Input ``chunk_factor``, output ``num_ranks * chunk_factor`` chunks."""

    def __init__(self, num_ranks, chunk_factor, inplace):
        Collective.__init__(self, num_ranks, chunk_factor, inplace)
        self.name = "allgather"

    def init_buffers(self):
        return self._sized(self.chunk_factor, self.num_ranks * self.chunk_factor)


class AllReduce(Collective):
    """Input and output ``num_ranks * chunk_factor`` chunks."""

    def __init__(self, num_ranks, chunk_factor, inplace):
        Collective.__init__(self, num_ranks, chunk_factor, inplace)
        self.name = "allreduce"

    def init_buffers(self):
        n = self.num_ranks * self.chunk_factor
        return self._sized(n, n)


class ReduceScatter(Collective):
    """Input ``num_ranks * chunk_factor``, output ``chunk_factor`` chunks."""

    def __init__(self, num_ranks, chunk_factor, inplace):
        Collective.__init__(self, num_ranks, chunk_factor, inplace)
        self.name = "reducescatter"

    def init_buffers(self):
        return self._sized(self.num_ranks * self.chunk_factor, self.chunk_factor)


class AllToAll(Collective):
    """Input and output ``num_ranks * chunk_factor`` chunks."""

    def __init__(self, num_ranks, chunk_factor, inplace):
        Collective.__init__(self, num_ranks, chunk_factor, inplace)
        self.name = "alltoall"

    def init_buffers(self):
        n = self.num_ranks * self.chunk_factor
        return self._sized(n, n)


class SendRecv(Collective):
    """Input and output ``chunk_factor`` chunks."""

    def __init__(self, num_ranks, chunk_factor, inplace):
        Collective.__init__(self, num_ranks, chunk_factor, inplace)
        self.name = "sendrecv"

    def init_buffers(self):
        return self._sized(self.chunk_factor, self.chunk_factor)
