"""msccl.language.collectives: the collectives MSCCLang programs implement.

``Collective`` is the base of custom collectives: override ``init_buffers()`` (the
precondition: one dict per rank mapping ``Buffer.input``/``Buffer.output`` to lists of
``Chunk`` or None) and ``check(prog)`` (the postcondition, reading
``prog.buffers[rank][Buffer.output][i]``). The built-ins map onto chorus's own collectives.
"""

from .chunk import Chunk, ReduceChunk
from .types import Buffer

__all__ = ["Collective", "AllReduce", "AllGather", "AllToAll", "ReduceScatter", "Chunk",
           "ReduceChunk"]


class Collective:
    """A custom collective on ``num_ranks`` ranks (its XML ``coll`` is ``custom``). chorus
    runs custom collectives out of place whatever ``inplace`` says."""

    # chorus.lang factory name for the built-ins; None for custom collectives.
    _chorus_kind = None

    def __init__(self, num_ranks, chunk_factor, inplace):
        self.num_ranks = num_ranks
        self.chunk_factor = chunk_factor
        self.inplace = inplace
        self.name = "custom"

    def init_buffers(self):
        """One dict per rank: buffer -> list of Chunk (or None for an empty slot)."""
        return None

    def check(self, prog):
        """Whether ``prog.buffers`` holds the postcondition (None: no check defined)."""
        return None

    def get_buffer_index(self, rank, buffer, index):
        """In-place aliasing: the (buffer, index) that physically holds (buffer, index) when
        accessed by ``rank``."""
        return buffer, index


def _report(rank, index, expected, given):
    print("Rank %d chunk %d is incorrect: expected %s, given %s"
          % (rank, index, _short(expected), _short(given)))


def _short(value):
    if isinstance(value, Chunk):
        return "Chunk(%d, %d)" % (value.origin_rank, value.origin_index)
    return repr(value)


def _sum_over(num_ranks, index):
    value = ReduceChunk(-1, [])
    for r in range(num_ranks):
        value = value.reduce(-1, Chunk(r, index))
    return value


class AllReduce(Collective):
    """out[c] = the reduction of input chunk c over all ranks; in place, output is input."""

    _chorus_kind = "allreduce"

    def __init__(self, num_ranks, chunk_factor, inplace):
        Collective.__init__(self, num_ranks, chunk_factor, inplace)
        self.name = "allreduce"

    def init_buffers(self):
        rank_buffers = []
        for r in range(self.num_ranks):
            inputs = [Chunk(r, c, -1, c) for c in range(self.chunk_factor)]
            outputs = inputs if self.inplace else [None] * self.chunk_factor
            rank_buffers.append({Buffer.input: inputs, Buffer.output: outputs})
        return rank_buffers

    def check(self, prog):
        buffer = Buffer.input if self.inplace else Buffer.output
        correct = True
        for r in range(self.num_ranks):
            for c in range(self.chunk_factor):
                expected = _sum_over(self.num_ranks, c)
                given = prog.buffers[r][buffer][c]
                if given != expected:
                    _report(r, c, expected, given)
                    correct = False
        return correct

    def get_buffer_index(self, rank, buffer, index):
        if self.inplace and buffer == Buffer.output:
            return Buffer.input, index
        return buffer, index


class AllGather(Collective):
    """out[r * chunk_factor + c] = input chunk c of rank r; in place, a rank's input is its
    window of the output."""

    _chorus_kind = "allgather"

    def __init__(self, num_ranks, chunk_factor, inplace):
        Collective.__init__(self, num_ranks, chunk_factor, inplace)
        self.name = "allgather"

    def init_buffers(self):
        cf = self.chunk_factor
        rank_buffers = []
        for r in range(self.num_ranks):
            inputs = [Chunk(r, c, -1, r * cf + c) for c in range(cf)]
            outputs = [None] * (self.num_ranks * cf)
            if self.inplace:
                outputs[r * cf:(r + 1) * cf] = inputs
            rank_buffers.append({Buffer.input: inputs, Buffer.output: outputs})
        return rank_buffers

    def check(self, prog):
        correct = True
        for r in range(self.num_ranks):
            for q in range(self.num_ranks):
                for c in range(self.chunk_factor):
                    index = q * self.chunk_factor + c
                    given = prog.buffers[r][Buffer.output][index]
                    if given is None or given != Chunk(q, c):
                        _report(r, index, Chunk(q, c), given)
                        correct = False
        return correct

    def get_buffer_index(self, rank, buffer, index):
        if self.inplace and buffer == Buffer.input:
            return Buffer.output, index + rank * self.chunk_factor
        return buffer, index


class AllToAll(Collective):
    """Rank r's out[q * chunk_factor + c] = input chunk r * chunk_factor + c of rank q; in
    place, output is input."""

    _chorus_kind = "alltoall"

    def __init__(self, num_ranks, chunk_factor, inplace):
        Collective.__init__(self, num_ranks, chunk_factor, inplace)
        self.name = "alltoall"

    def init_buffers(self):
        cf = self.chunk_factor
        size = self.num_ranks * cf
        rank_buffers = []
        for r in range(self.num_ranks):
            inputs = [Chunk(r, i, i // cf, i % cf + r * cf) for i in range(size)]
            outputs = inputs if self.inplace else [None] * size
            rank_buffers.append({Buffer.input: inputs, Buffer.output: outputs})
        return rank_buffers

    def check(self, prog):
        cf = self.chunk_factor
        correct = True
        for r in range(self.num_ranks):
            for q in range(self.num_ranks):
                for c in range(cf):
                    index = q * cf + c
                    expected = Chunk(q, r * cf + c)
                    given = prog.buffers[r][Buffer.output][index]
                    if given is None or given != expected:
                        _report(r, index, expected, given)
                        correct = False
        return correct


class ReduceScatter(Collective):
    """Rank r's out[c] = the reduction of input chunk r * chunk_factor + c over all ranks; in
    place, a rank's output is its window of the input. Named ``reduce_scatter`` as in
    microsoft/msccl-tools (the XML then says ``coll="reduce_scatter"``); set ``name`` to
    ``"reducescatter"`` for the MSCCL executor's spelling."""

    _chorus_kind = "reducescatter"

    def __init__(self, num_ranks, chunk_factor, inplace):
        Collective.__init__(self, num_ranks, chunk_factor, inplace)
        self.name = "reduce_scatter"

    def init_buffers(self):
        cf = self.chunk_factor
        rank_buffers = []
        for r in range(self.num_ranks):
            inputs = [Chunk(r, q * cf + c, q, c)
                      for q in range(self.num_ranks) for c in range(cf)]
            buffers = {Buffer.input: inputs}
            if not self.inplace:
                buffers[Buffer.output] = [None] * cf
            rank_buffers.append(buffers)
        return rank_buffers

    def check(self, prog):
        cf = self.chunk_factor
        correct = True
        for r in range(self.num_ranks):
            for c in range(cf):
                expected = _sum_over(self.num_ranks, r * cf + c)
                buffer, index = self.get_buffer_index(r, Buffer.output, c)
                given = prog.buffers[r][buffer][index]
                if given != expected:
                    _report(r, index, expected, given)
                    correct = False
        return correct

    def get_buffer_index(self, rank, buffer, index):
        if self.inplace and buffer == Buffer.output:
            return Buffer.input, index + rank * self.chunk_factor
        return buffer, index
