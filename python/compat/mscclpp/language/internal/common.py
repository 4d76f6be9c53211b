"""Helpers shared by rank.py and channel.py."""

from .errors import fail

__all__ = ["local_operand", "sync_bits", "tb_targets"]


def tb_targets(tb, tb_group, builtin=RuntimeError):
    """[(tb id, tbg_info or None)] for an operation given ``tb`` or ``tb_group`` (tb wins)."""
    if tb is not None:
        return [(tb, None)]
    if tb_group is not None:
        size = tb_group.numtb()
        return [(t, (tb_group.get_internal_id(t), size)) for t in tb_group.tb_list]
    fail("Either 'tb' (thread block ID) or 'tb_group' (ThreadBlockGroup) must be provided, but "
         "both are None.", builtin)


def local_operand(chunk):
    """(buffer letter, index, size) of a chunk of this rank, as operations record it."""
    return (chunk.buffer._letter, chunk.index, chunk.size)


def sync_bits(data_sync):
    """The bits of a SyncType (1: before, 2: after); a TypeError for anything else."""
    try:
        return data_sync._bits
    except AttributeError:
        fail("data_sync must be a SyncType, not %r" % (data_sync,), TypeError)
