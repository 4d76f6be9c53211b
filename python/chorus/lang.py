"""chorus.lang: the chorus DSL (GC3 §3) in Python.

One to one with the C++ DSL of ``include/chorus/lang.h``::

    from chorus.lang import Program, AllReduce, Buffer, chunk

    with Program("ring", AllReduce(ranks=4, chunk_factor=4, in_place=True)) as program:
        for index in range(4):
            ...
            c = chunk(rank, Buffer.input, index)          # a reference to chunks
            c = c.copy(next_rank, Buffer.input, index)    # returns the new reference
            c = peer.reduce(c)                            # peer = peer (+) c, in place
    plan = program.compile()                              # chorus's passes, then the verifier

Every call is checked while it is traced (out-of-range index, uninitialized or stale chunk...)
and raises ``chorus.ProgramError`` whose message starts with the Python file and line of the
offending call. ``Program.check()`` and ``compile()`` check the collective's postcondition.
docs/python.md documents the API with a worked example.
"""

import contextlib
import os
import sys

from . import _chorus
from ._chorus import Buffer, CompileError, OptionError, Plan, ProgramError, VerifyReport

__all__ = [
    "Buffer", "Program", "ChunkRef", "chunk", "current_program", "Collective", "Chunk",
    "AllReduce", "AllGather", "ReduceScatter", "AllToAll", "Broadcast", "Reduce", "AllToNext",
    "CustomCollective", "library", "algorithms", "pass_names", "Plan", "VerifyReport",
    "ProgramError", "CompileError", "OptionError",
]

# Frames in these directories are chorus's own: errors name the first frame outside them.
_internal_dirs = [os.path.dirname(os.path.abspath(__file__))]


def register_internal_dir(path):
    """Marks a wrapper package's directory (chorus's msccl compatibility package) as internal,
    so errors name its caller's line rather than the wrapper's."""
    path = os.path.dirname(os.path.abspath(path)) if os.path.isfile(path) else os.path.abspath(path)
    if path not in _internal_dirs:
        _internal_dirs.append(path)
        _internal_files.clear()


_internal_files = {}  # co_filename -> whether it lies in an internal directory


def _is_internal(filename):
    internal = _internal_files.get(filename)
    if internal is None:
        absolute = os.path.abspath(filename)
        internal = any(absolute.startswith(d + os.sep) for d in _internal_dirs)
        _internal_files[filename] = internal
    return internal


def caller_location(depth=1):
    """'file.py:line' of the innermost caller outside chorus's own (and registered) packages."""
    frame = sys._getframe(depth)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not _is_internal(filename):
            return "%s:%d" % (filename, frame.f_lineno)
        frame = frame.f_back
    return "<unknown>"


# ---------------------------------------------------------------------------------------------
# Collectives


class Collective:
    """A collective's pre- and postcondition on a number of ranks (immutable)."""

    __slots__ = ("_native",)

    def __init__(self, native):
        self._native = native

    name = property(lambda self: self._native.name)
    ranks = property(lambda self: self._native.ranks)
    chunk_factor = property(lambda self: self._native.chunk_factor)
    in_place = property(lambda self: self._native.in_place)
    root = property(lambda self: self._native.root)
    has_postcondition = property(lambda self: self._native.has_postcondition)

    def input_chunks(self, rank):
        """Chunks in ``rank``'s input buffer."""
        return self._native.input_chunks(rank)

    def output_chunks(self, rank):
        """Chunks in ``rank``'s output buffer."""
        return self._native.output_chunks(rank)

    def precondition(self, rank, index):
        """The ``Chunk`` input chunk ``index`` of ``rank`` starts with, or None when unused."""
        parts = self._native.initial_input(rank, index)
        return Chunk(*parts[0]) if parts else None

    def postcondition(self, rank, index):
        """What output chunk ``index`` of ``rank`` must end with: a ``Chunk``, a reduction of
        several (a list of ``Chunk``), or None when any value is accepted."""
        parts = self._native.expected_output(rank, index)
        if parts is None:
            return None
        chunks = [Chunk(r, i) for r, i in parts]
        return chunks[0] if len(chunks) == 1 else chunks

    def __repr__(self):
        return "<chorus.lang.Collective %s on %d ranks, chunk factor %d%s>" % (
            self.name, self.ranks, self.chunk_factor, ", in place" if self.in_place else "")


def AllReduce(ranks, chunk_factor=1, in_place=False):
    """out[c] = the reduction of input chunk c over all ranks."""
    return Collective(_chorus.builtin_collective("allreduce", ranks, chunk_factor, in_place))


def AllGather(ranks, chunk_factor=1, in_place=False):
    """out[r * chunk_factor + c] = input chunk c of rank r, on every rank."""
    return Collective(_chorus.builtin_collective("allgather", ranks, chunk_factor, in_place))


def ReduceScatter(ranks, chunk_factor=1, in_place=False):
    """Rank r's out[c] = the reduction of input chunk r * chunk_factor + c over all ranks."""
    return Collective(_chorus.builtin_collective("reducescatter", ranks, chunk_factor, in_place))


def AllToAll(ranks, chunk_factor=1, in_place=False):
    """Rank r's out[s * chunk_factor + c] = input chunk r * chunk_factor + c of rank s."""
    return Collective(_chorus.builtin_collective("alltoall", ranks, chunk_factor, in_place))


def Broadcast(ranks, chunk_factor=1, root=0, in_place=False):
    """Every rank's out[c] = input chunk c of the root."""
    return Collective(_chorus.builtin_collective("broadcast", ranks, chunk_factor, in_place,
                                                 root))


def Reduce(ranks, chunk_factor=1, root=0, in_place=False):
    """The root's out[c] = the reduction of input chunk c over all ranks."""
    return Collective(_chorus.builtin_collective("reduce", ranks, chunk_factor, in_place, root))


def AllToNext(ranks, chunk_factor=1, backward=False):
    """GC3 §7.4: rank r's input ends in rank r+1's output (r-1's with backward=True)."""
    kind = "alltonext-backward" if backward else "alltonext"
    return Collective(_chorus.builtin_collective(kind, ranks, chunk_factor))


class Chunk:
    """Input chunk ``index`` of ``rank`` as a symbolic value. ``a + b`` is their reduction."""

    __slots__ = ("rank", "index")

    def __init__(self, rank, index):
        self.rank = int(rank)
        self.index = int(index)

    def __add__(self, other):
        return _Reduction(_parts_of(self) + _parts_of(other))

    __radd__ = __add__

    def __eq__(self, other):
        return isinstance(other, Chunk) and (self.rank, self.index) == (other.rank, other.index)

    def __hash__(self):
        return hash((self.rank, self.index))

    def __repr__(self):
        return "Chunk(%d, %d)" % (self.rank, self.index)


class _Reduction(tuple):
    """The reduction of several input chunks (order ignored, duplicates counted)."""

    def __add__(self, other):
        return _Reduction(tuple(self) + _parts_of(other))

    __radd__ = __add__


def _parts_of(value):
    if isinstance(value, Chunk):
        return (value,)
    if isinstance(value, (list, tuple)):
        parts = ()
        for item in value:
            parts += _parts_of(item)
        return parts
    raise TypeError("expected a chorus.lang.Chunk or a list of them, got %r" % (value,))


def _pairs(value):
    return [(c.rank, c.index) for c in _parts_of(value)]


def _sizes(value, ranks, what):
    if isinstance(value, int):
        return [value] * ranks
    sizes = [int(v) for v in value]
    if len(sizes) != ranks:
        raise OptionError("%s gives %d sizes for %d ranks; give one per rank or a single int"
                          % (what, len(sizes), ranks))
    return sizes


def CustomCollective(name, ranks, input_chunks, output_chunks, postcondition,
                     precondition=None):
    """A collective defined in Python, checked like the built-in ones.

    - ``input_chunks``/``output_chunks``: chunks per rank (an int, or one per rank).
    - ``precondition(rank, index)``: whether input chunk ``index`` of ``rank`` holds data at
      the start (its value is ``Chunk(rank, index)``); default: every input chunk does.
    - ``postcondition(rank, index)``: what output chunk ``index`` of ``rank`` must hold at the
      end: a ``Chunk``, a reduction (``Chunk(0, 1) + Chunk(1, 1)`` or a list of chunks), or
      None when any value is accepted.

    The tables are evaluated once, here. The collective is registered under ``name`` so that
    plans naming it are checked by ``Plan.verify()``, ``chorus.run`` and ``chorus verify``
    in this process.
    """
    ins = _sizes(input_chunks, ranks, "input_chunks")
    outs = _sizes(output_chunks, ranks, "output_chunks")
    pre = []
    for r in range(ranks):
        row = []
        for i in range(ins[r]):
            used = True if precondition is None else precondition(r, i)
            row.append([(r, i)] if used else None)
        pre.append(row)
    post = []
    for r in range(ranks):
        row = []
        for i in range(outs[r]):
            value = postcondition(r, i)
            row.append(None if value is None else _pairs(value))
        post.append(row)
    return Collective(_chorus.table_collective(name, pre, post))


# ---------------------------------------------------------------------------------------------
# Programs

_programs = []  # the programs whose `with` block is open, innermost last


def current_program():
    """The innermost Program whose ``with`` block is open."""
    if not _programs:
        raise ProgramError("%s: chunk() needs a program: call it inside `with Program(...):`"
                           % caller_location(2))
    return _programs[-1]


def chunk(rank, buffer, index, count=1):
    """A reference to ``count`` chunks at (rank, buffer, index) of the current program."""
    return current_program().chunk(rank, buffer, index, count, _where=caller_location(2))


class ChunkRef:
    """``count`` contiguous chunks at (rank, buffer, index) as they were when the reference was
    made; using it after any of them was overwritten is an error (stale)."""

    __slots__ = ("_native",)

    def __init__(self, native):
        self._native = native

    rank = property(lambda self: self._native.rank)
    buffer = property(lambda self: self._native.buffer)
    index = property(lambda self: self._native.index)
    count = property(lambda self: self._native.count)

    def copy(self, rank, buffer, index, channel=-1, send_tb=-1, recv_tb=-1, _where=None):
        """Copies these chunks to (rank, buffer, index..) and returns the new reference.
        ``channel``, ``send_tb`` and ``recv_tb`` place the transfer by hand (-1: the compiler
        chooses)."""
        return ChunkRef(self._native.copy(rank, buffer, index, channel, send_tb, recv_tb,
                                          _where or caller_location(2)))

    def reduce(self, other, channel=-1, send_tb=-1, recv_tb=-1, _where=None):
        """self = self (+) other, in place at this reference's location; ``other`` may live on
        another rank. Returns the new reference."""
        if not isinstance(other, ChunkRef):
            raise TypeError("reduce() takes a ChunkRef, got %r" % (other,))
        return ChunkRef(self._native.reduce(other._native, channel, send_tb, recv_tb,
                                            _where or caller_location(2)))

    def slice(self, offset, count, _where=None):
        """The sub-reference of ``count`` chunks starting ``offset`` chunks in."""
        return ChunkRef(self._native.slice(offset, count, _where or caller_location(2)))

    def __repr__(self):
        return "<ChunkRef rank %d %s[%d:%d]>" % (self.rank, self.buffer.name, self.index,
                                                 self.index + self.count)


class Program:
    """Traces one algorithm for one collective. Use it as a context manager so that the free
    function ``chunk()`` refers to it; its methods work outside the block too."""

    def __init__(self, name, collective, instances=1, protocol="simple", _native=None):
        if _native is None:
            if not isinstance(collective, Collective):
                raise TypeError("Program needs a chorus.lang collective (AllReduce(...), ...), "
                                "got %r" % (collective,))
            _native = _chorus.NativeProgram(name, collective._native, instances, protocol)
        self._native = _native

    name = property(lambda self: self._native.name)
    instances = property(lambda self: self._native.instances)
    protocol = property(lambda self: self._native.protocol)
    collective = property(lambda self: Collective(self._native.collective))
    ranks = property(lambda self: self._native.collective.ranks)
    op_count = property(lambda self: self._native.op_count, doc="copies and reduces traced")

    def __enter__(self):
        _programs.append(self)
        return self

    def __exit__(self, *exc):
        _programs.remove(self)
        return False

    def chunk(self, rank, buffer, index, count=1, _where=None):
        """A reference to ``count`` chunks at (rank, buffer, index); they must hold values."""
        return ChunkRef(self._native.chunk(rank, buffer, index, count,
                                           _where or caller_location(2)))

    def initialized(self, rank, buffer, index):
        """Whether (rank, buffer, index) holds a value now."""
        return self._native.initialized(rank, buffer, index)

    def value(self, rank, buffer, index):
        """The symbolic value at (rank, buffer, index): a Chunk, a list of Chunks (a
        reduction) or None."""
        parts = self._native.value_at(rank, buffer, index)
        if not parts:
            return None
        chunks = [Chunk(r, i) for r, i in parts]
        return chunks[0] if len(chunks) == 1 else chunks

    @contextlib.contextmanager
    def parallelize(self, factor, _where=None):
        """Ops traced inside run ``factor`` times, each on 1/factor of every chunk and on its
        own channels (GC3 §5.1). Blocks nest."""
        self._native.push_parallel(factor, _where or caller_location(3))
        try:
            yield
        finally:
            self._native.pop_parallel()

    def check(self):
        """The postcondition's violations on the traced state, as sentences; [] when the
        program computes its collective."""
        return self._native.check_postcondition()

    def compile(self, fifo_slots=8, wait_cost=4, fuse=True, verify=True, disabled_passes=(),
                min_bytes=0, max_bytes=0):
        """Compiles with chorus's passes (docs/compiler.md) into a ``Plan``. ``fuse=False``
        disables the fuse-instructions pass; ``disabled_passes`` names any optional pass
        (``pass_names()``). Raises
        ``CompileError`` naming the wrong chunks when the postcondition does not hold, and the
        verifier's findings when ``verify``."""
        options = _chorus.CompileOptions()
        options.fifo_slots = fifo_slots
        options.wait_cost = wait_cost
        options.verify = verify
        disabled = list(disabled_passes)
        if not fuse and "fuse-instructions" not in disabled:
            disabled.append("fuse-instructions")
        options.disabled_passes = disabled
        options.min_bytes = _chorus_size(min_bytes)
        options.max_bytes = _chorus_size(max_bytes)
        return self._native.compile(options)

    def __repr__(self):
        return "<chorus.lang.Program %r: %s on %d ranks, %d ops>" % (
            self.name, self.collective.name, self.ranks, self.op_count)


def _chorus_size(value):
    if isinstance(value, str):
        from .execute import parse_size
        return parse_size(value)
    return int(value)


# ---------------------------------------------------------------------------------------------
# The algorithm library


def algorithms():
    """The library's algorithms: dicts with name, collective, description, citation, shape,
    min_ranks, params (name, default, min, max, description, value_names) and cost."""
    return _chorus.algorithms()


def library(name, ranks=0, nodes=0, gpus_per_node=0, instances=1, protocol="simple", **params):
    """The library algorithm ``name`` (``chorus algorithms``) traced with its parameters, as a
    Program ready to compile: ``library("allreduce.ring", ranks=8, channels=2).compile()``."""
    native = _chorus.build_algorithm(name, ranks, nodes, gpus_per_node, params, instances,
                                     protocol)
    return Program(None, None, _native=native)


def pass_names():
    """The compiler's passes in pipeline order (for ``disabled_passes``)."""
    return list(_chorus.pass_names())
