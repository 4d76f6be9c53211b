"""msccl-tools collectives as chorus.lang collectives (built-in, AllToNext or a table)."""

import chorus
import chorus.lang

from ._errors import fail
from .types import Buffer

__all__ = ["chorus_collective"]

# chorus's AllToNext is registered under these exact names (src/ir/collective.cpp).
_ALLTONEXT_NAMES = {"alltonext": False, "alltonext-forward": False,
                    "alltonext-backward": True, "alltonext-backwards": True}


def chorus_collective(collective, program_name, buffers=None, where=None):
    """The chorus.lang collective for an msccl-tools ``collective`` used by a program named
    ``program_name``.

    Built-ins map onto chorus's. A custom collective becomes a ``CustomCollective`` named
    after the program (msccl-tools writes ``coll="custom"`` and the program's name): its
    precondition is every non-None input chunk of ``init_buffers()`` (``buffers``), its
    postcondition each input chunk's ``dst_rank``/``dst_index`` where both are >= 0. The
    table is registered under that name, so ``chorus.run`` and ``Plan.verify()`` in this
    process check plans naming it. A program named like chorus's AllToNext ("alltonext",
    "alltonext-forward", "alltonext-backward", "alltonext-backwards") gets the built-in one,
    which its ``init_buffers()`` must agree with.
    """
    if collective._chorus_kind is not None:
        factory = {"allreduce": chorus.lang.AllReduce, "allgather": chorus.lang.AllGather,
                   "alltoall": chorus.lang.AllToAll,
                   "reducescatter": chorus.lang.ReduceScatter}[collective._chorus_kind]
        return factory(collective.num_ranks, collective.chunk_factor, bool(collective.inplace))
    if buffers is None:
        buffers = collective.init_buffers()
    table = _table_of(collective, buffers, where)
    if program_name in _ALLTONEXT_NAMES:
        return _alltonext(program_name, table, where)
    ins, outs, pre, post = table
    try:
        return chorus.lang.CustomCollective(
            program_name, collective.num_ranks, ins, outs,
            postcondition=lambda r, i: post.get((r, i)),
            precondition=lambda r, i: (r, i) in pre)
    except chorus.Error as error:
        fail("MSCCLProgram()", "custom collective '%s': %s" % (program_name, error), where)


def _table_of(collective, buffers, where):
    """(input sizes, output sizes, initialized inputs, {(rank, index): chorus Chunk})."""
    what = "MSCCLProgram()"
    n = collective.num_ranks
    if not isinstance(buffers, (list, tuple)) or len(buffers) != n:
        fail(what, "%s.init_buffers() must return one dict of buffers per rank (%d), got %r"
             % (type(collective).__name__, n, buffers), where)
    ins, outs, pre, post = [], [], set(), {}
    for r, rank_buffers in enumerate(buffers):
        extra = [key for key in rank_buffers if key not in (Buffer.input, Buffer.output)]
        if extra:
            fail(what, "rank %d's init_buffers() entry has buffers %r; give only Buffer.input "
                 "and Buffer.output (scratch buffers are created by copies)" % (r, extra), where)
        inputs = rank_buffers.get(Buffer.input, [])
        outputs = rank_buffers.get(Buffer.output, [])
        if inputs is outputs and inputs:
            fail(what, "rank %d's input and output buffers are the same list: chorus runs "
                 "custom collectives out of place; give each rank its own output list" % r,
                 where)
        ins.append(len(inputs))
        outs.append(len(outputs))
        for i, value in enumerate(inputs):
            if value is None:
                continue
            if (value.origin_rank, value.origin_index) != (r, i):
                fail(what, "rank %d input[%d] holds %r; chorus needs each input chunk's origin "
                     "to be its own place, Chunk(%d, %d, ...)" % (r, i, value, r, i), where)
            pre.add((r, i))
            if value.dst_rank < 0 or value.dst_index < 0:
                continue
            key = (value.dst_rank, value.dst_index)
            if key[0] >= n or key[1] >= len(buffers[key[0]].get(Buffer.output, [])):
                fail(what, "rank %d input[%d] names destination rank %d output[%d], which does "
                     "not exist" % (r, i, key[0], key[1]), where)
            if key in post:
                fail(what, "rank %d output[%d] is the destination of two chunks, %r and %r"
                     % (key[0], key[1], post[key], value), where)
            post[key] = chorus.lang.Chunk(r, i)
    return ins, outs, pre, post


def _alltonext(name, table, where):
    backward = _ALLTONEXT_NAMES[name]
    ins = table[0]
    builtin = chorus.lang.AllToNext(len(ins), max(ins, default=1), backward=backward)
    rank = _first_difference(table, builtin)
    if rank is None:
        return builtin
    fail("MSCCLProgram()", "'%s' names chorus's built-in AllToNext collective (rank r's input "
         "goes to rank %s's output) but this collective's init_buffers() differs from it on "
         "rank %d; give the program another name" % (name, "r-1" if backward else "r+1", rank),
         where)


def _first_difference(table, builtin):
    """The first rank where the table's sizes, initialized inputs or given destinations
    differ from ``builtin``; None when they agree."""
    ins, outs, pre, post = table
    factor = builtin.chunk_factor
    for r in range(len(ins)):
        if ins[r] != factor or outs[r] != factor:
            return r
        for i in range(factor):
            if ((r, i) in pre) != (builtin.precondition(r, i) is not None):
                return r
            if (r, i) in post and post[(r, i)] != builtin.postcondition(r, i):
                return r
    return None
