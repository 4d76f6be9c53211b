"""Rank (local operations), buffers and semaphores."""

from .internal.errors import fail
from .internal.globals import get_program
from .internal.common import local_operand as _local, sync_bits as _sync_bits, tb_targets
from .internal.ops import Barrier, Copy, Nop, Reduce, SemOp
from .internal.types import BufferType, ChannelType, Chunk, ReduceOperationType, SyncType
from .thread_block_group import ThreadBlockGroup

__all__ = ["Rank", "BaseBuffer", "Buffer", "Semaphore", "Chunk", "BufferType", "SyncType",
           "ChannelType", "ReduceOperationType", "ThreadBlockGroup", "get_program"]

# Barrier ids per rank, keyed by the exact tb list. Process-wide and never reset, as in MSCCL++
# (a second program in one process gets shifted ids; docs/python.md "mscclpp").
_barriers = []


def _barrier_id(rank, tb_list):
    while len(_barriers) <= rank:
        _barriers.append({})
    table = _barriers[rank]
    key = tuple(tb_list)
    if key not in table:
        table[key] = len(table)
    return table[key]


class Rank:
    """Rank ``rank`` of the current program: its buffers and its local operations."""

    def __init__(self, rank):
        prog = get_program()
        self.rank = rank
        if rank >= prog.num_ranks:
            # MSCCL++ fails here with an AttributeError (its message reads self.prog); same type.
            fail("Rank %s is out of bounds. Number of ranks: %d" % (rank, prog.num_ranks),
                 AttributeError)

    def __repr__(self):
        return "Rank(rank=%r)" % (self.rank,)

    def __eq__(self, other):
        return isinstance(other, Rank) and other.rank == self.rank

    __hash__ = None

    def get_input_buffer(self):
        return get_program().buffers[self.rank][BufferType.input]

    def get_output_buffer(self):
        return get_program().buffers[self.rank][BufferType.output]

    def _copy(self, dst_chunk, src_chunk, tb, tb_group, name):
        if dst_chunk.rank != self.rank or src_chunk.rank != self.rank:
            fail("Inconsistent ranks: dst %s, src %s, self %s. They must match."
                 % (dst_chunk.rank, src_chunk.rank, self.rank))
        if dst_chunk.size != src_chunk.size:
            fail("Inconsistent chunk sizes: dst %s, src %s. They must match."
                 % (dst_chunk.size, src_chunk.size))
        if name == "upkt" and src_chunk.buffer != BufferType.scratch:
            fail("Source chunk must be of type scratch.")
        if name == "cpkt" and dst_chunk.buffer != BufferType.scratch:
            fail("Destination chunk must be of type scratch.")
        prog = get_program()
        src, dst = _local(src_chunk), _local(dst_chunk)
        for tb_id, tbg in tb_targets(tb, tb_group):
            prog.add_operation(self.rank, tb_id, Copy(name, [src], [dst], tbg))

    def copy(self, dst_chunk, src_chunk, tb=None, tb_group=None):
        """Copies ``src_chunk`` to ``dst_chunk`` (both on this rank)."""
        self._copy(dst_chunk, src_chunk, tb, tb_group, "copy")

    def unpack_packets(self, dst_chunk, src_chunk, tb=None, tb_group=None):
        """Copies LL packets in scratch ``src_chunk`` to plain data in ``dst_chunk`` (upkt)."""
        self._copy(dst_chunk, src_chunk, tb, tb_group, "upkt")

    def copy_packets(self, dst_chunk, src_chunk, tb=None, tb_group=None):
        """Copies ``src_chunk`` into LL packets in scratch ``dst_chunk`` (cpkt)."""
        self._copy(dst_chunk, src_chunk, tb, tb_group, "cpkt")

    def reduce(self, src_chunk, other_chunks, tb=None, tb_group=None, dst_chunk=None,
               reduce_op=ReduceOperationType.sum, packet=False):
        """Reduces ``other_chunks`` into ``src_chunk`` (into ``dst_chunk`` if given); with
        ``packet``, the others are LL packets in scratch (repkt)."""
        if dst_chunk is None:
            dst_chunk = src_chunk
        if dst_chunk.rank != self.rank or src_chunk.rank != self.rank:
            fail("Inconsistent ranks: dst %s, src %s, self %s. They must match."
                 % (dst_chunk.rank, src_chunk.rank, self.rank))
        if dst_chunk.size != src_chunk.size:
            fail("Inconsistent chunk sizes: dst %s, src %s. They must match."
                 % (dst_chunk.size, src_chunk.size))
        if len(other_chunks) == 0:
            fail("Other chunk empty.")
        for chunk in other_chunks:
            if chunk.rank != self.rank:
                fail("Other chunk rank %s does not match current rank %s."
                     % (chunk.rank, self.rank))
            if chunk.size != src_chunk.size:
                fail("Inconsistent chunk sizes: other %s, src %s. They must match."
                     % (chunk.size, src_chunk.size))
            if packet and chunk.buffer != BufferType.scratch:
                fail("Other chunk must be of type scratch.")
        prog = get_program()
        srcs = [_local(src_chunk)] + [_local(c) for c in other_chunks]
        dst = _local(dst_chunk)
        rop = reduce_op.value
        for tb_id, tbg in tb_targets(tb, tb_group):
            prog.add_operation(self.rank, tb_id,
                               Reduce(list(srcs), [dst], rop=rop, tbg=tbg, packet=bool(packet)))

    def barrier(self, tb_list):
        """Synchronises the threadblocks ``tb_list`` of this rank (one: a nop)."""
        if len(tb_list) == 0:
            fail("Barrier requires at least thread block.")
        prog = get_program()
        if len(tb_list) == 1:
            prog.add_operation(self.rank, tb_list[0], Nop())
        else:
            op = Barrier(_barrier_id(self.rank, tb_list), len(tb_list))
            for tb in tb_list:
                prog.add_operation(self.rank, tb, op)


class BaseBuffer:
    """Chunks [offset, offset + size) of one rank's buffer; slicing gives a ``Chunk``."""

    def __init__(self, rank, buffer_type, offset, size):
        self.rank = rank
        self.buffer_type = buffer_type
        self.offset = offset
        self.size = offset + size  # the end, as MSCCL++ stores it

    def __getitem__(self, key):
        if not isinstance(key, slice):
            fail("Buffer indices must be slices, not %s" % type(key).__name__, TypeError)
        if key.step is not None and key.step != 1:
            fail("Buffer slicing does not support step != 1 (got step=%s)" % (key.step,),
                 ValueError)
        length = self.size - self.offset
        start = key.start if key.start is not None else 0
        stop = key.stop if key.stop is not None else length
        if start < 0 or stop < 0:
            fail("Buffer slicing does not support negative indices (got start=%s, stop=%s)"
                 % (key.start, key.stop), ValueError)
        if start > stop:
            fail("Buffer slice start (%s) must be <= stop (%s)" % (start, stop), ValueError)
        if self.offset + stop > self.size:
            fail("Index range from %s - %s is out of bounds for buffer %s. Buffer size: %s"
                 % (self.offset + start, self.offset + stop, self.buffer_type, self.size))
        return Chunk(self.rank, self.buffer_type, self.offset + start, stop - start)


class Buffer(BaseBuffer):
    """``size`` new chunks at the end of ``rank``'s scratch buffer."""

    def __init__(self, rank, size):
        prog = get_program()
        if rank >= prog.num_ranks:
            fail("Rank %s is out of bounds. Number of ranks: %d" % (rank, prog.num_ranks),
                 AttributeError)
        gpu = prog.gpus[rank]
        self.rank = rank
        self.buffer_type = BufferType.scratch
        self.offset = gpu.scratch_chunks
        self.size = self.offset + size
        gpu.scratch_chunks += size


class Semaphore:
    """A semaphore of ``rank`` with ``initial_value``; ids count per rank within a program."""

    _semaphore_counts = {}

    @classmethod
    def reset(cls):
        cls._semaphore_counts.clear()

    def __init__(self, rank, initial_value):
        prog = get_program()
        if rank >= prog.num_ranks:
            fail("Source rank %s is out of bounds. Number of ranks: %d" % (rank, prog.num_ranks))
        self.id = Semaphore._semaphore_counts.get(rank, 0)
        Semaphore._semaphore_counts[rank] = self.id + 1
        self.rank = rank
        self.initial_value = initial_value
        prog.gpus[rank].semaphores.append(initial_value)

    def acquire(self, tb, data_sync=SyncType.both):
        get_program().add_operation(self.rank, tb,
                                    SemOp("sem_acquire", [self.id], _sync_bits(data_sync)))

    def release(self, tb, data_sync=SyncType.both):
        get_program().add_operation(self.rank, tb,
                                    SemOp("sem_release", [self.id], _sync_bits(data_sync)))
