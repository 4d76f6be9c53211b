"""msccl.language.buffer: named scratch buffers (``BufferSlice``)."""

from .types import Buffer

__all__ = ["Buffer", "BufferSlice"]


class BufferSlice:
    """One named scratch buffer of one rank: a list of chunks that grows on write (writing
    past the end pads with None). At lowering, a rank's named buffers are laid end to end in
    chorus's scratch buffer in creation order; ``offset`` is this one's start."""

    def __init__(self, buf, name):
        self.buf = buf
        self.name = name
        self.offset = -1
        self.chunks = []

    def get_buffer(self):
        return self.buf

    def instance_size(self):
        """Chunks used so far (the index ``copy(..., index=-1)`` appends at)."""
        return len(self.chunks)

    def set_offset(self, offset):
        self.offset = offset

    def get_global_index(self, index):
        if self.offset < 0:
            raise RuntimeError("BufferSlice %r: set_offset() was not called" % (self.name,))
        return self.offset + index

    def __getitem__(self, index):
        return self.chunks[index]

    def __setitem__(self, index, value):
        if index >= len(self.chunks):
            self.chunks.extend([None] * (index + 1 - len(self.chunks)))
        self.chunks[index] = value

    def __len__(self):
        return len(self.chunks)

    def __repr__(self):
        return "BufferSlice(%r, %d chunks)" % (self.name, len(self.chunks))
