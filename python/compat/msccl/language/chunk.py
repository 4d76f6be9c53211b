"""msccl.language.chunk: the symbolic chunk values buffers hold while a program is traced."""

__all__ = ["Chunk", "ReduceChunk"]


class Chunk:
    """Input chunk ``origin_index`` of ``origin_rank``. ``dst_rank``/``dst_index`` say where a
    custom collective wants it to end (-1: anywhere or everywhere); equality and hashing use
    the origin only."""

    __slots__ = ("origin_rank", "origin_index", "dst_rank", "dst_index")

    def __init__(self, origin_rank, origin_index, dst_rank=-1, dst_index=-1):
        self.origin_rank = origin_rank
        self.origin_index = origin_index
        self.dst_rank = dst_rank
        self.dst_index = dst_index

    def reduce(self, dst, chunk):
        """The reduction of this chunk and ``chunk`` (a Chunk or ReduceChunk), made on rank
        ``dst``."""
        if isinstance(chunk, ReduceChunk):
            return chunk.reduce(dst, self)
        if isinstance(chunk, Chunk):
            return ReduceChunk(dst, [self, chunk])
        raise TypeError("cannot reduce %r with %r" % (self, chunk))

    def _key(self):
        return (self.origin_rank, self.origin_index)

    def __eq__(self, other):
        return type(other) is Chunk and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __lt__(self, other):
        return self._key() < other._key()

    def __repr__(self):
        return "Chunk(origin_rank=%d, origin_index=%d, dst_rank=%d, dst_index=%d)" % (
            self.origin_rank, self.origin_index, self.dst_rank, self.dst_index)


class ReduceChunk:
    """The reduction of ``chunks`` (a list of Chunk). Equality ignores order but counts
    duplicates, so a chunk reduced twice is caught."""

    __slots__ = ("creation_rank", "chunks")

    def __init__(self, creation_rank, chunks):
        self.creation_rank = creation_rank
        self.chunks = list(chunks)

    def reduce(self, dst, chunk):
        """A new ReduceChunk with ``chunk`` (a Chunk or ReduceChunk) added."""
        if isinstance(chunk, ReduceChunk):
            return ReduceChunk(self.creation_rank, self.chunks + chunk.chunks)
        if isinstance(chunk, Chunk):
            return ReduceChunk(self.creation_rank, self.chunks + [chunk])
        raise TypeError("cannot reduce %r with %r" % (self, chunk))

    def sort(self):
        self.chunks.sort()

    def __eq__(self, other):
        return isinstance(other, ReduceChunk) and sorted(self.chunks) == sorted(other.chunks)

    def __hash__(self):
        return hash(tuple(sorted(self.chunks)))

    def __repr__(self):
        return "ReduceChunk(%s)" % ", ".join(
            "(%d, %d)" % c._key() for c in sorted(self.chunks))
