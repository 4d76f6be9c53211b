"""What ``to_json`` does to a program's operations before writing them, per threadblock:
fusion, data-sync nops, auto-sync nops (on interval maps kept with bisect), replication.

Each pass follows MSCCL++'s at 1f5f065 (optimizer.py, operations.py add_data_sync,
buffer_access.py, gpu.py replicate_instances), quirks included (docs/python.md "mscclpp").
"""

from bisect import bisect_left

from .ops import SYNC_OP_NAMES, Barrier, Nop, Pipeline

__all__ = ["fuse", "add_data_sync", "auto_sync"]


def fuse(ops):
    """Greedy left-to-right fusion; a pipeline at the head of a group gets its body fused."""
    out = []
    n = len(ops)
    i = 0
    while i < n:
        cur = ops[i]
        if cur.__class__ is Pipeline:
            cur.ops = fuse(cur.ops)
        j = i + 1
        while j < n:
            fused = cur.fuse(ops[j])
            if fused is None:
                break
            cur = fused
            j += 1
        out.append(cur)
        i = j
    return out


def add_data_sync(ops):
    """A nop before a sync op whose data_sync has `before`, and after it for `after`."""
    out = []
    for op in ops:
        if op.__class__ is Pipeline:
            op.ops = add_data_sync(op.ops)
            out.append(op)
        elif op.name in SYNC_OP_NAMES:
            ds = op.ds
            if ds & 1:
                out.append(Nop())
            out.append(op)
            if ds & 2:
                out.append(Nop())
        else:
            out.append(op)
    return out


class _Intervals:
    """Disjoint inclusive chunk intervals of one buffer, sorted by (start, end), each with the
    operation that last accessed it and whether that was a write."""

    __slots__ = ("keys", "vals")

    def __init__(self):
        self.keys = []  # (start, end), sorted
        self.vals = {}  # (start, end) -> (owner, is_write)

    def lower_bound(self, start):
        # First key whose end >= start (the last key if none), as MSCCL++'s binary search.
        keys = self.keys
        lo, hi = 0, len(keys) - 1
        while lo < hi:
            mid = (lo + hi) // 2
            if start <= keys[mid][1]:
                hi = mid
            else:
                lo = mid + 1
        return lo

    def insert(self, key, val):
        if key not in self.vals:
            keys = self.keys
            keys.insert(bisect_left(keys, key), key)
        self.vals[key] = val

    def remove(self, key):
        keys = self.keys
        del keys[bisect_left(keys, key)]
        del self.vals[key]


class _BufferAccess:
    def __init__(self):
        self.maps = {}

    def clear(self):
        self.maps.clear()

    def access(self, buf, start, end, owner, is_write):
        """Records one access; True if it conflicts with an earlier operation's (a write on
        either side), which clears every map first (MSCCL++ then forgets the op's earlier
        accesses too)."""
        m = self.maps.get(buf)
        if m is None:
            m = self.maps[buf] = _Intervals()
        conflict = False
        keys = m.keys
        if keys:
            idx = m.lower_bound(start)
            while keys:
                k = keys[idx]
                if not (start <= k[1] and k[0] <= end):
                    break
                old_owner, old_write = m.vals[k]
                if old_owner is not owner and (is_write or old_write):
                    self.clear()
                    conflict = True
                    m = self.maps[buf] = _Intervals()
                    break
                m.remove(k)
                if k[1] > end:
                    m.insert((end + 1, k[1]), (old_owner, old_write))
                if k[0] < start:
                    m.insert((k[0], start - 1), (old_owner, old_write))
                keys = m.keys
                if not keys:
                    break
                idx = m.lower_bound(start)
        m.insert((start, end), (owner, is_write))
        return conflict

    def process(self, ops):
        out = []
        for op in ops:
            cls = op.__class__
            if cls is Nop or cls is Barrier:
                self.clear()
            else:
                if cls is Pipeline:
                    op.ops = _BufferAccess().process(op.ops)
                synced = False
                for buf, start, end, is_write in op.accesses():
                    if self.access(buf, start, end, op, is_write) and not synced:
                        out.append(Nop())
                        synced = True
            out.append(op)
        return out


def auto_sync(ops):
    """A nop before each operation whose local access conflicts with an earlier one's."""
    return _BufferAccess().process(ops)
