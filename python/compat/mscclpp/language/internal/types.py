"""Enums and value types of the DSL (the names MSCCL++'s ``internal/types.py`` defines)."""

from enum import Enum

__all__ = ["SyncType", "ReduceOperationType", "BufferType", "ChannelType", "Chunk", "RankGroup",
           "SYNC_NONE", "SYNC_BEFORE", "SYNC_AFTER", "SYNC_BOTH"]

# data_sync as a 2-bit set inside the package: bit 1 = before, bit 2 = after.
SYNC_NONE, SYNC_BEFORE, SYNC_AFTER, SYNC_BOTH = 0, 1, 2, 3


class SyncType(Enum):
    """When a sync operation orders the threadblock's own memory accesses: a nop before it,
    after it, both or none. ``|``, ``&`` and ``^`` act on the two bits (before, after)."""

    none = "none"
    before = "before"
    after = "after"
    both = "both"

    def __str__(self):
        return self.value

    def __or__(self, other):
        if not isinstance(other, SyncType):
            return NotImplemented
        return _SYNC_FROM_BITS[_SYNC_BITS[self] | _SYNC_BITS[other]]

    def __and__(self, other):
        if not isinstance(other, SyncType):
            return NotImplemented
        return _SYNC_FROM_BITS[_SYNC_BITS[self] & _SYNC_BITS[other]]

    def __xor__(self, other):
        if not isinstance(other, SyncType):
            return NotImplemented
        return _SYNC_FROM_BITS[_SYNC_BITS[self] ^ _SYNC_BITS[other]]


_SYNC_BITS = {SyncType.none: 0, SyncType.before: 1, SyncType.after: 2, SyncType.both: 3}
_SYNC_FROM_BITS = [SyncType.none, SyncType.before, SyncType.after, SyncType.both]
for _member, _bits in _SYNC_BITS.items():
    _member._bits = _bits  # read on every signal/wait: an attribute, not a dict lookup


class ReduceOperationType(Enum):
    sum = "sum"
    min = "min"
    max = "max"

    def __str__(self):
        return self.value


class BufferType(Enum):
    """A rank's buffers; the value is the plan's buffer letter."""

    input = "i"
    output = "o"
    scratch = "s"

    def __str__(self):
        return self.value

    def __lt__(self, other):
        return self.value < other.value

    def __gt__(self, other):
        return self.value > other.value


for _member in BufferType:
    _member._letter = _member.value  # a plain attribute: Enum's .value is a slow descriptor


class ChannelType(Enum):
    # Member names as MSCCL++'s: a set of them iterates in the same (hash-seed dependent) order.
    port = "port"
    memory = "memory"
    switch = "switch"
    none = "none"

    def __str__(self):
        return self.value


class Chunk:
    """``size`` chunks of ``rank``'s ``buffer`` from ``index`` (what slicing a buffer gives)."""

    __slots__ = ("rank", "buffer", "index", "size")

    def __init__(self, rank, buffer, index, size):
        self.rank = rank
        self.buffer = buffer
        self.index = index
        self.size = size

    def __eq__(self, other):
        if other.__class__ is not self.__class__:
            return NotImplemented
        return (self.rank, self.buffer, self.index, self.size) == (
            other.rank, other.buffer, other.index, other.size)

    def __hash__(self):
        return hash((self.rank, self.buffer, self.index, self.size))

    def __repr__(self):
        return "Chunk(rank=%r, buffer=%r, index=%r, size=%r)" % (
            self.rank, self.buffer, self.index, self.size)

    def to_dict(self):
        return {"rank": self.rank, "type": self.buffer.value, "index": self.index,
                "size": self.size}


class RankGroup:
    """The ranks of a switch channel."""

    __slots__ = ("size", "ranks")

    def __init__(self, size, ranks):
        self.size = size
        self.ranks = ranks

    def __eq__(self, other):
        return isinstance(other, RankGroup) and (self.size, self.ranks) == (other.size, other.ranks)

    __hash__ = None

    def __repr__(self):
        return "RankGroup(size=%r, ranks=%r)" % (self.size, self.ranks)

    def to_dict(self):
        return {"size": self.size, "ranks": self.ranks}
