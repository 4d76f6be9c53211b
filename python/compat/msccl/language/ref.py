"""msccl.language's chunk references (``Ref``): copy, reduce, split, group."""

from ._errors import caller_location, fail
from .types import Buffer

__all__ = ["Ref"]


class Ref:
    """``size`` chunks at (rank, buffer, index) of a program. A Ref names a place, not a
    value (as in msccl-tools): using it after its chunks changed reads what is there now."""

    __slots__ = ("rank", "buffer", "index", "size", "prog")

    def __init__(self, rank, buffer, index, size, prog):
        self.rank = rank
        self.buffer = buffer
        self.index = index
        self.size = size
        self.prog = prog

    def _key(self):
        return (self.rank, self.buffer, self.index, self.size, id(self.prog))

    def __eq__(self, other):
        return isinstance(other, Ref) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key()[:4])

    def __repr__(self):
        return "Ref(Buffer:%s, Index:%d, Size:%d, Rank:%d)" % (self.buffer, self.index,
                                                              self.size, self.rank)

    def _end(self):
        return self.index + self.size

    def _get_chunk(self, index, what):
        return self.prog._chunks(self, what, caller_location(), offset=index, count=1)[0]

    def split(self, num):
        """``num`` equal references covering this one, in order."""
        if num < 1 or self.size % num != 0:
            fail("split(%r)" % (num,), "cannot split %r into %r equal parts" % (self, num))
        size = self.size // num
        return [Ref(self.rank, self.buffer, self.index + i * size, size, self.prog)
                for i in range(num)]

    def group(self, other):
        """The reference from the lower start to the higher end of the two (same rank and
        buffer; chunks between them are included)."""
        if other.rank != self.rank or other.buffer != self.buffer:
            fail("group()", "%r and %r are on different ranks or buffers" % (self, other))
        first = self if self.index < other.index else other
        end = max(self._end(), other._end())
        return Ref(self.rank, self.buffer, first.index, end - first.index, self.prog)

    def copy(self, dst, buffer=None, index=-1, sendtb=-1, recvtb=-1, ch=-1):
        """Copies these chunks to rank ``dst`` and returns the new reference (None when that
        is this very place). ``buffer=None`` with ``index=-1`` keeps buffer and index;
        ``index=-1`` on a named scratch buffer appends to it."""
        where = caller_location()
        return self.prog._copy(self, dst, buffer, index, sendtb, recvtb, ch, where)

    def reduce(self, other, sendtb=-1, recvtb=-1, ch=-1):
        """self = self (+) other, here; ``other`` may be on another (linked) rank. Returns
        self."""
        where = caller_location()
        if not isinstance(other, Ref):
            fail("reduce()", "expected a chunk reference (from chunk() or copy()), got %r%s"
                 % (other, "; chunk() returns None for an empty slot" if other is None else ""),
                 where)
        return self.prog._reduce(self, other, sendtb, recvtb, ch, where)

    def get_origin_index(self, index=0):
        return self._get_chunk(index, "get_origin_index()").origin_index

    def get_origin_rank(self, index=0):
        return self._get_chunk(index, "get_origin_rank()").origin_rank

    def get_dst_index(self, index=0):
        return self._get_chunk(index, "get_dst_index()").dst_index

    def get_dst_rank(self, index=0):
        return self._get_chunk(index, "get_dst_rank()").dst_rank

    def print_chunk_info(self, index=0):
        print(self._get_chunk(index, "print_chunk_info()"))


def is_named(buffer):
    """Whether ``buffer`` names a scratch buffer (anything but Buffer.input/output)."""
    return buffer is not Buffer.input and buffer is not Buffer.output
