"""Lowering a traced MSCCLang program: named scratch layout, replay into chorus.lang."""

import chorus.lang

from .ref import is_named
from .types import Buffer

__all__ = ["Op", "layout_scratch", "replay"]

_CHORUS_BUFFER = {Buffer.input: chorus.lang.Buffer.input,
                  Buffer.output: chorus.lang.Buffer.output}


class Op:
    """One traced copy or reduce: ``src`` (rank, buffer, index) is read, ``dst`` written
    (``dst = src`` or ``dst = dst (+) src``), ``size`` chunks; ``where`` is the user's line."""

    __slots__ = ("kind", "src", "dst", "size", "channel", "send_tb", "recv_tb", "where")

    def __init__(self, kind, src, dst, size, channel, send_tb, recv_tb, where):
        self.kind = kind
        self.src = src
        self.dst = dst
        self.size = size
        self.channel = channel
        self.send_tb = send_tb
        self.recv_tb = recv_tb
        self.where = where


def layout_scratch(buffers):
    """Lays each rank's named scratch buffers end to end in chorus's scratch buffer, in the
    order they were created (msccl-tools' ``lower_buffers``, for one instance: chorus
    replicates scratch per instance itself). Returns per rank {buffer key: offset}."""
    offsets = []
    for rank_buffers in buffers:
        offset, table = 0, {}
        for key, slots in rank_buffers.items():
            if is_named(key):
                slots.set_offset(offset)
                table[key] = offset
                offset += slots.instance_size()
        offsets.append(table)
    return offsets


def replay(prog):
    """A chorus.lang.Program with ``prog``'s traced ops, each located at its user line."""
    offsets = layout_scratch(prog.buffers)

    def place(location):
        rank, buffer, index = location
        if is_named(buffer):
            return rank, chorus.lang.Buffer.scratch, offsets[rank][buffer] + index
        return rank, _CHORUS_BUFFER[buffer], index

    program = chorus.lang.Program(prog.name, prog._chorus_collective, instances=prog.instances,
                                  protocol=prog.protocol)
    for op in prog._ops:
        src = place(op.src)
        dst = place(op.dst)
        if op.kind == "copy":
            ref = program.chunk(*src, op.size, _where=op.where)
            ref.copy(*dst, channel=op.channel, send_tb=op.send_tb, recv_tb=op.recv_tb,
                     _where=op.where)
        else:
            own = program.chunk(*dst, op.size, _where=op.where)
            other = program.chunk(*src, op.size, _where=op.where)
            own.reduce(other, channel=op.channel, send_tb=op.send_tb, recv_tb=op.recv_tb,
                       _where=op.where)
    return program
