"""MSCCLProgram and the free functions chunk(), XML() and Check() of msccl.language.

Algorithm (why a replay): chorus has one scratch buffer per rank whose indices are fixed
when an op is traced, while msccl-tools lays a rank's named scratch buffers end to end only
after tracing. So a program is traced here, on msccl-tools' own symbolic buffers (which
``chunk()``, ``get_dst_index()`` and ``Check()`` hooks read), recording each copy and reduce
with its user line; XML() and Check() lay out the named buffers and replay the ops into a
chorus.lang Program, whose errors then name those lines.
"""

import chorus

from . import _lowering
from ._bridge import chorus_collective
from ._errors import caller_location, fail
from .buffer import BufferSlice
from .ref import Ref, is_named
from .types import Buffer, ThreadblockPolicy

__all__ = ["MSCCLProgram", "chunk", "create_scratch", "XML", "Check"]

_PROTOCOLS = ("Simple", "LL", "LL128")
_current_program = None


def _curr(what):
    if _current_program is None:
        fail(what, "no MSCCLProgram in context; call it inside `with MSCCLProgram(...):`")
    return _current_program


def _slot_name(rank, buffer, index):
    if is_named(buffer):
        return "rank %d scratch buffer %r [%d]" % (rank, buffer, index)
    return "rank %d %s[%d]" % (rank, buffer.name, index)


class MSCCLProgram:
    """An MSCCLang program: msccl-tools' constructor, run on chorus's compiler.

    - ``protocol`` and ``instances`` become chorus's; ``instr_fusion`` is the compiler's
      ``fuse`` option; ``threadblock_policy`` as ``ThreadblockPolicy`` says.
    - ``interleaved_replication=False`` (duplicated instances) is accepted but chorus always
      interleaves each chunk across instances; ``check_xml`` is accepted and chorus always
      verifies; ``dependence_nop`` is accepted and has no effect (chorus prunes waits itself
      and never emits msccl-tools' nop-before-reduce layout).
    - ``lower()`` returns the compiled ``chorus.Plan`` (msccl-tools returns its own IR).
    """

    def __init__(self, name, topo, collective, instances, protocol="Simple",
                 threadblock_policy=ThreadblockPolicy.auto, interleaved_replication=True,
                 instr_fusion=True, check_xml=True, dependence_nop=False):
        where = caller_location()
        what = "MSCCLProgram()"
        if protocol not in _PROTOCOLS:
            fail(what, "protocol %r: must be Simple, LL or LL128" % (protocol,), where)
        if not isinstance(instances, int) or instances < 1:
            fail(what, "instances must be an integer >= 1, got %r" % (instances,), where)
        try:
            threadblock_policy = ThreadblockPolicy(threadblock_policy)
        except ValueError:
            fail(what, "threadblock_policy %r: use ThreadblockPolicy.auto or .manual"
                 % (threadblock_policy,), where)
        self.name = name
        self.topo = topo
        self.collective = collective
        self.num_ranks = topo.num_nodes()
        self.instances = instances
        self.protocol = protocol
        self.threadblock_policy = threadblock_policy
        self.interleaved_replication = interleaved_replication
        self.instr_fusion = instr_fusion
        self.check_xml = check_xml
        self.dependence_nop = dependence_nop
        if collective.num_ranks != self.num_ranks:
            fail(what, "the collective has %d ranks but topology %s has %d"
                 % (collective.num_ranks, getattr(topo, "name", topo), self.num_ranks), where)
        self.buffers = collective.init_buffers()
        self._chorus_collective = chorus_collective(collective, name, self.buffers, where)
        self._ops = []
        self._traced = None  # (op count, chorus.lang.Program)
        self._compiled = None  # (op count, chorus.Plan)

    def __enter__(self):
        global _current_program
        if _current_program is not None:
            fail("MSCCLProgram", "there is already an MSCCLProgram in context (%r)"
                 % (_current_program.name,))
        _current_program = self
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        global _current_program
        if _current_program is self:
            _current_program = None
        return False

    # --- msccl-tools' program methods -----------------------------------------------------

    def get_ref(self, rank, buffer, index, size):
        buffer, index = self.collective.get_buffer_index(rank, buffer, index)
        return Ref(rank, buffer, index, size, self)

    def check_buffer_exists(self, rank, name):
        """Creates rank ``rank``'s named scratch buffer ``name`` unless it exists."""
        if name not in self.buffers[rank]:
            self.buffers[rank][name] = BufferSlice(Buffer.scratch, name)

    def check(self):
        """The collective's ``check(prog)`` hook and chorus's postcondition (for custom
        collectives, the destinations their chunks name): True when both hold. Prints each
        wrong chunk."""
        hook = self.collective.check(self)
        violations = self.chorus_program().check()
        if hook or hook is None:
            for violation in violations:
                print("Check(): %s" % violation)
        return (hook is None or bool(hook)) and not violations

    def chorus_program(self):
        """The traced ops replayed into a ``chorus.lang.Program`` (cached until more ops)."""
        if self._traced is None or self._traced[0] != len(self._ops):
            self._traced = (len(self._ops), _lowering.replay(self))
        return self._traced[1]

    def lower(self):
        """The program compiled and verified by chorus, as a ``chorus.Plan``."""
        if self._compiled is None or self._compiled[0] != len(self._ops):
            plan = self.chorus_program().compile(fuse=bool(self.instr_fusion), verify=True)
            self._compiled = (len(self._ops), plan)
        return self._compiled[1]

    def generate_xml(self):
        """MSCCL XML of ``lower()``; ``coll`` follows the collective's name for reduce-scatter
        (``reduce_scatter`` as in msccl-tools, or ``reducescatter``)."""
        legacy = getattr(self.collective, "name", "") == "reduce_scatter"
        return self.lower().to_string("xml", legacy_names=legacy)

    # --- tracing (called by Ref and chunk()) ----------------------------------------------

    def _check_rank(self, rank, what, where):
        if not isinstance(rank, int) or not 0 <= rank < self.num_ranks:
            fail(what, "rank %r is out of range; '%s' has ranks 0..%d"
                 % (rank, self.name, self.num_ranks - 1), where)

    def _slots(self, rank, buffer, what, where):
        self._check_rank(rank, what, where)
        slots = self.buffers[rank].get(buffer)
        if slots is None:
            fail(what, "rank %d has no buffer %r; a named scratch buffer exists once something "
                 "is copied into it" % (rank, buffer), where)
        return slots

    def _check_range(self, rank, buffer, index, size, slots, what, where):
        if not isinstance(index, int):
            fail(what, "index %r on rank %d is not an integer" % (index, rank), where)
        if index == -1 and not is_named(buffer):
            fail(what, "index -1 on rank %d's %s buffer: -1 appends only to named scratch "
                 "buffers; give an index" % (rank, buffer.name), where)
        if index < 0:
            fail(what, "%s has a negative index" % _slot_name(rank, buffer, index), where)
        if index + size > len(slots):
            fail(what, "%s is out of range; that buffer %s %d chunks (indices 0..%d)"
                 % (_slot_name(rank, buffer, max(index, len(slots))),
                    "holds so far" if is_named(buffer) else "has", len(slots), len(slots) - 1),
                 where)

    def _chunks(self, ref, what, where, offset=0, count=None):
        """The values at ``ref`` (from ``offset``, ``count`` of them); each must be set."""
        count = ref.size - offset if count is None else count
        slots = self._slots(ref.rank, ref.buffer, what, where)
        start = ref.index + offset
        self._check_range(ref.rank, ref.buffer, start, count, slots, what, where)
        values = [slots[start + i] for i in range(count)]
        for i, value in enumerate(values):
            if value is None:
                fail(what, "%s is empty (uninitialized): only the collective's input chunks "
                     "hold values at the start; copy something there first"
                     % _slot_name(ref.rank, ref.buffer, start + i), where)
        return values

    def _store(self, ref, values, what, where):
        if is_named(ref.buffer):
            self._check_rank(ref.rank, what, where)
            self.check_buffer_exists(ref.rank, ref.buffer)
        slots = self._slots(ref.rank, ref.buffer, what, where)
        # Named scratch buffers grow on write.
        grows = is_named(ref.buffer) and isinstance(ref.index, int)
        self._check_range(ref.rank, ref.buffer, ref.index, ref.size,
                          range(ref.index + ref.size) if grows else slots, what, where)
        for i, value in enumerate(values):
            slots[ref.index + i] = value

    def _check_link(self, src, dst, what, where):
        for rank in (src, dst):
            self._check_rank(rank, what, where)
        if src != dst and not self.topo.link(src, dst):
            fail(what, "no link from rank %d to rank %d in topology %s (msccl-tools asserts "
                 "topo.link(src, dst) for every copy and reduce); route through a linked rank"
                 % (src, dst, getattr(self.topo, "name", self.topo)), where)

    def _same_place(self, a, b):
        return (a.rank, a.index, a.size) == (b.rank, b.index, b.size) and \
            self.buffers[a.rank].get(a.buffer) is self.buffers[b.rank].get(b.buffer)

    def _record(self, kind, src, dst, sendtb, recvtb, ch, where):
        what = kind + "()"
        for name, value in (("sendtb", sendtb), ("recvtb", recvtb), ("ch", ch)):
            if not isinstance(value, int) or value < -1:
                fail(what, "%s must be an integer >= 0, or -1 to let the compiler choose; got %r"
                     % (name, value), where)
        manual = self.threadblock_policy is ThreadblockPolicy.manual
        self._ops.append(_lowering.Op(kind, (src.rank, src.buffer, src.index),
                                      (dst.rank, dst.buffer, dst.index), src.size, ch,
                                      sendtb if manual else -1, recvtb if manual else -1, where))

    def _chunk(self, rank, buffer, index, size, where):
        what = "chunk()"
        if not isinstance(size, int) or size < 1:
            fail(what, "size must be an integer >= 1, got %r" % (size,), where)
        buffer, index = self.collective.get_buffer_index(rank, buffer, index)
        slots = self._slots(rank, buffer, what, where)
        self._check_range(rank, buffer, index, size, slots, what, where)
        if slots[index] is None:
            return None
        return Ref(rank, buffer, index, size, self)

    def _copy(self, ref, dst, buffer, index, sendtb, recvtb, ch, where):
        what = "copy()"
        self._check_rank(dst, what, where)
        if index == -1 and buffer is None:
            buffer, index = ref.buffer, ref.index
        elif index == -1 and is_named(buffer):
            index = len(self.buffers[dst].get(buffer, ()))
        buffer, index = self.collective.get_buffer_index(ref.rank, buffer, index)
        self._check_link(ref.rank, dst, what, where)
        target = Ref(dst, buffer, index, ref.size, self)
        if target == ref:
            return None
        values = self._chunks(ref, what, where)
        self._store(target, values, what, where)
        if not self._same_place(ref, target):
            self._record("copy", ref, target, sendtb, recvtb, ch, where)
        return target

    def _reduce(self, ref, other, sendtb, recvtb, ch, where):
        what = "reduce()"
        self._check_link(other.rank, ref.rank, what, where)
        if other.size != ref.size:
            fail(what, "sizes differ: %r has %d chunks but %r has %d; reduce equal sizes "
                 "(split() cuts a reference)" % (ref, ref.size, other, other.size), where)
        sources = self._chunks(other, what, where)
        targets = self._chunks(ref, what, where)
        self._store(ref, [t.reduce(ref.rank, s) for t, s in zip(targets, sources)], what, where)
        self._record("reduce", other, ref, sendtb, recvtb, ch, where)
        return ref


def chunk(rank, buffer, index, size=1):
    """A reference to ``size`` chunks at (rank, buffer, index) of the program in context, or
    None when the slot at ``index`` is empty."""
    where = caller_location()
    return _curr("chunk()")._chunk(rank, buffer, index, size, where)


def create_scratch(rank, name):
    """Creates rank ``rank``'s named scratch buffer ``name`` (empty)."""
    _curr("create_scratch()").check_buffer_exists(rank, name)


def XML():
    """Prints the program's MSCCL XML, compiled and verified by chorus. Raises the compiler's
    error, prefixed with this call's line, when chorus rejects the program (for example a
    wrong postcondition, which msccl-tools would still print)."""
    where = caller_location()
    prog = _curr("XML()")
    try:
        text = prog.generate_xml()
    except chorus.ProgramError:
        raise
    except chorus.Error as error:
        raise type(error)("%s: XML(): %s" % (where, error)) from None
    print(text)


def Check():
    """Whether the traced program computes its collective (see ``MSCCLProgram.check``)."""
    return _curr("Check()").check()
