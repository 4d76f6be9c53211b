"""The operations of a threadblock, their fusion and their JSON.

Chunks inside operations are tuples: a local chunk ``(buffer letter, index, size)``, a remote one
``(buffer letter, index, size, tb-local remote buffer id)``; switch operations keep the user's
``Chunk`` object, as MSCCL++ does (replication then shifts it once per operation holding it).
``ds`` is data_sync as bits (types.SYNC_*). Fusion follows MSCCL++'s ``__add__`` methods at
1f5f065 rule for rule, including their side effects on data_sync (docs/python.md "mscclpp").
"""

from .types import SYNC_AFTER, SYNC_BEFORE

__all__ = ["Nop", "Barrier", "SemOp", "ChanSync", "Copy", "Get", "Put", "Reduce", "GroupLoadReduce",
           "GroupStore", "GroupLoadReduceStore", "Pipeline", "SYNC_OP_NAMES", "local_dict",
           "remote_dict", "reset_chunk_dicts"]

# Channel types are their names (strings hash as ChannelType members do: sets of either iterate
# alike).
MEMORY = "memory"
NO_CHANNEL = "none"
NOT_BEFORE = ~SYNC_BEFORE
NOT_AFTER = ~SYNC_AFTER

# Operations whose data_sync becomes nops (MSCCL++'s add_data_sync).
SYNC_OP_NAMES = frozenset(("sem_acquire", "sem_release", "signal", "wait", "rlxsignal", "rlxwait",
                           "flush"))


# One dict per distinct chunk entry while a plan is written (emit.py then writes each once).
_chunk_dicts = {}


def reset_chunk_dicts():
    """Forgets the chunk dicts of the previous plan (called before writing one)."""
    _chunk_dicts.clear()


def local_dict(c):
    d = _chunk_dicts.get(c)
    if d is None:
        d = _chunk_dicts[c] = {"type": c[0], "index": c[1], "size": c[2]}
    return d


def remote_dict(c):
    d = _chunk_dicts.get(c)  # a remote chunk has 4 fields, a local one 3: distinct keys
    if d is None:
        d = _chunk_dicts[c] = {"buffer_id": c[3], "index": c[1], "size": c[2]}
    return d


def _shift_all(chunks, i, n):
    """Interleaved replication of chunk tuples: index -> index * n + i * size."""
    return [(c[0], c[1] * n + i * c[2]) + c[2:] for c in chunks]


def _tbg_dict(tbg):
    return {"tb_id": tbg[0], "tbg_size": tbg[1]}


class Op:
    __slots__ = ()
    is_sync = False  # carries data_sync (MSCCL++'s check_data_sync_op)

    def fuse(self, other):
        """The fused operation, or None (possibly after adjusting data_sync)."""
        return None

    def accesses(self):
        """The local accesses auto-sync orders: [(buffer letter, first, last chunk, is_write)]."""
        return ()

    def replicate(self, i, n, memo):
        return self


def _before(op):
    """MSCCL++'s test "other needs a sync before it": a sync op with `before`, a pipeline whose
    body starts with one (or with a nop), a nop or a barrier."""
    cls = op.__class__
    if cls is Nop or cls is Barrier:
        return True
    if op.is_sync:
        return op.ds & SYNC_BEFORE
    if cls is Pipeline:
        return op.data_sync() & SYNC_BEFORE
    return False


class Nop(Op):
    __slots__ = ()
    name = "nop"

    def fuse(self, other):
        cls = other.__class__
        if cls is Nop:
            return Nop()
        if cls is Barrier:
            return other
        if cls is Pipeline and other.data_sync() & SYNC_BEFORE:
            return other
        if other.is_sync:
            other.ds &= NOT_BEFORE
        return None

    def to_dict(self):
        return {"name": "nop"}


class Barrier(Op):
    __slots__ = ("barrier_id", "num_threadblocks")
    name = "barrier"

    def __init__(self, barrier_id, num_threadblocks):
        self.barrier_id = barrier_id
        self.num_threadblocks = num_threadblocks

    def fuse(self, other):
        if other.is_sync:
            other.ds &= NOT_BEFORE
        elif other.__class__ is Nop:
            return self
        return None

    def replicate(self, i, n, memo):
        return Barrier(self.barrier_id * n + i, self.num_threadblocks)

    def to_dict(self):
        return {"name": "barrier", "barrier_id": self.barrier_id,
                "num_threadblocks": self.num_threadblocks}


class SemOp(Op):
    """sem_acquire / sem_release."""

    __slots__ = ("name", "ids", "ds")
    is_sync = True

    def __init__(self, name, ids, ds):
        self.name = name
        self.ids = ids
        self.ds = ds

    def fuse(self, other):
        if other.__class__ is SemOp and other.name == self.name:
            return SemOp(self.name, self.ids + other.ids, self.ds | other.ds)
        if _before(other):
            self.ds &= NOT_AFTER
        return None

    def replicate(self, i, n, memo):
        return SemOp(self.name, [v * n + i for v in self.ids], self.ds)

    def to_dict(self):
        return {"name": self.name, "semaphore_ids": list(self.ids)}


class ChanSync(Op):
    """signal / rlxsignal / wait / rlxwait / flush on a set of tb-local channels."""

    __slots__ = ("name", "channels", "ctype", "ds")
    is_sync = True

    def __init__(self, name, channels, ctype, ds):
        self.name = name
        self.channels = channels  # a set, iterated as MSCCL++ iterates its set
        self.ctype = ctype
        self.ds = ds

    def fuse(self, other):
        if other.__class__ is ChanSync and other.name == self.name and other.ctype == self.ctype:
            # Same kind and type: flushes always fuse, signals and waits on disjoint channels.
            if self.name == "flush" or self.channels.isdisjoint(other.channels):
                return ChanSync(self.name, self.channels | other.channels, self.ctype,
                                self.ds | other.ds)
        if _before(other):
            self.ds &= NOT_AFTER
        return None

    def replicate(self, i, n, memo):
        return ChanSync(self.name, set(list(self.channels)), self.ctype, self.ds)

    def to_dict(self):
        return {"name": self.name, "channel_ids": list(self.channels),
                "channel_type": self.ctype}


class Copy(Op):
    """copy / cpkt (to packets) / upkt (from packets)."""

    __slots__ = ("name", "src", "dst", "tbg")

    def __init__(self, name, src, dst, tbg):
        self.name = name
        self.src = src
        self.dst = dst
        self.tbg = tbg

    def accesses(self):
        out = []
        if self.name != "upkt":
            out += [(c[0], c[1], c[1] + c[2] - 1, False) for c in self.src]
        if self.name != "cpkt":
            out += [(c[0], c[1], c[1] + c[2] - 1, True) for c in self.dst]
        return out

    def replicate(self, i, n, memo):
        return Copy(self.name, _shift_all(self.src, i, n), _shift_all(self.dst, i, n), self.tbg)

    def to_dict(self):
        d = {"name": self.name, "src_buff": [local_dict(c) for c in self.src],
             "dst_buff": [local_dict(c) for c in self.dst]}
        if self.tbg is not None:
            d["tbg_info"] = _tbg_dict(self.tbg)
        return d


class Get(Op):
    __slots__ = ("src", "dst", "channel_ids", "ctype", "tbg")
    name = "get"

    def __init__(self, src, dst, channel_ids, ctype, tbg):
        self.src = src
        self.dst = dst
        self.channel_ids = channel_ids
        self.ctype = ctype
        self.tbg = tbg

    def accesses(self):
        return [(c[0], c[1], c[1] + c[2] - 1, True) for c in self.dst]

    def fuse(self, other):
        if (other.__class__ is Get and self.src[0][2] == other.src[0][2]
                and self.ctype == other.ctype and self.tbg == other.tbg):
            return Get(self.src + other.src, self.dst + other.dst,
                       self.channel_ids + other.channel_ids, self.ctype, self.tbg)
        return None

    def replicate(self, i, n, memo):
        return Get(_shift_all(self.src, i, n), _shift_all(self.dst, i, n), list(self.channel_ids),
                   self.ctype, self.tbg)

    def to_dict(self):
        d = {"name": "get", "src_buff": [remote_dict(c) for c in self.src],
             "dst_buff": [local_dict(c) for c in self.dst], "channel_ids": self.channel_ids,
             "channel_type": self.ctype}
        if self.tbg is not None:
            d["tbg_info"] = _tbg_dict(self.tbg)
        return d


_PUT_FUSING = frozenset(("put", "ppkt", "pws", "pwsf"))


class Put(Op):
    """put / ppkt / rppkt / pws / pwsf: local sources, remote destinations."""

    __slots__ = ("name", "src", "dst", "channel_ids", "ctype", "tbg")

    def __init__(self, name, src, dst, channel_ids, ctype, tbg):
        self.name = name
        self.src = src
        self.dst = dst
        self.channel_ids = channel_ids
        self.ctype = ctype
        self.tbg = tbg

    def accesses(self):
        if self.name == "rppkt":
            return ()
        return [(c[0], c[1], c[1] + c[2] - 1, False) for c in self.src]

    def fuse(self, other):
        if other.__class__ is not Put or other.name != self.name or other.ctype != self.ctype \
                or other.tbg != self.tbg:
            return None
        if self.name in _PUT_FUSING:
            if self.src[0][2] == other.src[0][2]:
                return Put(self.name, self.src + other.src, self.dst + other.dst,
                           self.channel_ids + other.channel_ids, self.ctype, self.tbg)
        elif self.src == other.src:  # rppkt: one packet source, several destinations
            return Put(self.name, self.src, self.dst + other.dst,
                       self.channel_ids + other.channel_ids, self.ctype, self.tbg)
        return None

    def replicate(self, i, n, memo):
        return Put(self.name, _shift_all(self.src, i, n), _shift_all(self.dst, i, n),
                   list(self.channel_ids), self.ctype, self.tbg)

    def to_dict(self):
        d = {"name": self.name, "src_buff": [local_dict(c) for c in self.src],
             "dst_buff": [remote_dict(c) for c in self.dst]}
        if self.ctype == "port":
            d["channel_ids"] = self.channel_ids
        d["channel_type"] = self.ctype
        if self.tbg is not None:
            d["tbg_info"] = _tbg_dict(self.tbg)
        return d


def _reduce_name(rsrc, rdst, lpkt, packet):
    if not rsrc and not rdst:
        if packet:
            return "recpkt" if lpkt else "repkt"
        return "re"
    if not rsrc:
        if packet:
            return "recspkt" if lpkt else "respkt"
        return "res"
    if not packet:
        return "rres" if rdst else "rre"
    raise RuntimeError("Reduce Operation invalid parameters.")


class Reduce(Op):
    """re, res, rre, rres and the packet forms repkt, respkt, recpkt, recspkt."""

    __slots__ = ("name", "lsrc", "ldst", "lpkt", "rsrc", "rdst", "channel_ids", "put_channel_ids",
                 "ctype", "rop", "tbg", "packet")

    def __init__(self, lsrc, ldst, lpkt=None, rsrc=None, rdst=None, channel_ids=None,
                 put_channel_ids=None, ctype=NO_CHANNEL, rop="sum", tbg=None, packet=False):
        # List arguments become the operation's own (callers pass fresh lists).
        lpkt = [] if lpkt is None else lpkt
        rsrc = [] if rsrc is None else rsrc
        rdst = [] if rdst is None else rdst
        self.name = _reduce_name(rsrc, rdst, lpkt, packet)
        self.lsrc = lsrc
        self.ldst = ldst
        self.lpkt = lpkt
        self.rsrc = rsrc
        self.rdst = rdst
        self.channel_ids = [] if channel_ids is None else channel_ids
        self.put_channel_ids = [] if put_channel_ids is None else put_channel_ids
        self.ctype = ctype
        self.rop = rop
        self.tbg = tbg
        self.packet = packet

    def accesses(self):
        out = []
        # MSCCL++ exempts src[0] of a packet reduce from auto-sync (though the packets are
        # src[1..]); reproduced, docs/python.md "mscclpp".
        skip_first = self.packet
        for k, c in enumerate(self.lsrc):
            if not (skip_first and k == 0):
                out.append((c[0], c[1], c[1] + c[2] - 1, False))
        out += [(c[0], c[1], c[1] + c[2] - 1, True) for c in self.ldst]
        return out

    def fuse(self, other):
        name = self.name
        ocls = other.__class__
        if ocls is Reduce:
            if (name in ("re", "repkt", "rre") and other.name == name
                    and self.lsrc[0] == other.lsrc[0] and self.ldst == other.ldst
                    and self.ctype == other.ctype and self.rop == other.rop
                    and self.tbg == other.tbg):
                return Reduce(self.lsrc + other.lsrc[1:], self.ldst,
                              rsrc=self.rsrc + other.rsrc,
                              channel_ids=self.channel_ids + other.channel_ids, ctype=self.ctype,
                              rop=self.rop, tbg=self.tbg, packet=self.packet)
        elif ocls is Put:
            if other.ctype != MEMORY or other.tbg != self.tbg:
                return None
            if other.name == "put":
                ok = name in ("re", "res", "rre", "rres") and self.ldst[0] == other.src[0]
                lpkt = None
            elif other.name == "ppkt":
                if name in ("repkt", "respkt"):
                    ok = self.ldst[0] == other.src[0]
                    lpkt = None
                else:
                    ok = name in ("recpkt", "recspkt") and self.ldst[0] == other.src[0]
                    lpkt = list(self.lpkt)
            elif other.name == "rppkt":
                ok = name in ("recpkt", "recspkt") and self.lpkt[0] == other.src[0]
                lpkt = list(self.lpkt)
            else:
                ok = False
            if ok:
                return Reduce(self.lsrc, self.ldst, lpkt=lpkt, rsrc=list(self.rsrc),
                              rdst=self.rdst + other.dst, channel_ids=list(self.channel_ids),
                              put_channel_ids=self.put_channel_ids + other.channel_ids,
                              ctype=other.ctype, rop=self.rop, tbg=self.tbg, packet=self.packet)
        elif ocls is Copy:
            if (name == "repkt" and other.name == "cpkt" and self.ldst[0] == other.src[0]
                    and self.tbg == other.tbg):
                return Reduce(self.lsrc, self.ldst, lpkt=list(other.dst), rsrc=list(self.rsrc),
                              rdst=list(self.rdst), channel_ids=list(self.channel_ids),
                              put_channel_ids=list(self.put_channel_ids), ctype=self.ctype,
                              rop=self.rop, tbg=self.tbg, packet=self.packet)
        return None

    def replicate(self, i, n, memo):
        op = Reduce.__new__(Reduce)
        op.name = self.name
        op.lsrc = _shift_all(self.lsrc, i, n)
        op.ldst = _shift_all(self.ldst, i, n)
        op.lpkt = list(self.lpkt)  # not shifted, as in MSCCL++ (docs/python.md "mscclpp")
        op.rsrc = _shift_all(self.rsrc, i, n)
        op.rdst = _shift_all(self.rdst, i, n)
        op.channel_ids = list(self.channel_ids)
        op.put_channel_ids = list(self.put_channel_ids)
        op.ctype = self.ctype
        op.rop = self.rop
        op.tbg = self.tbg
        op.packet = self.packet
        return op

    def to_dict(self):
        src = [local_dict(c) for c in self.lsrc]
        dst = [local_dict(c) for c in self.ldst]
        dst += [local_dict(c) for c in self.lpkt]
        src += [remote_dict(c) for c in self.rsrc]
        dst += [remote_dict(c) for c in self.rdst]
        d = {"name": self.name, "src_buff": src, "dst_buff": dst}
        if self.ctype != NO_CHANNEL:
            d["channel_type"] = self.ctype
        d["reduce_op"] = self.rop
        if self.tbg is not None:
            d["tbg_info"] = _tbg_dict(self.tbg)
        return d


def _shift_user_chunk(chunk, size, i, n, memo):
    """The tb copy's clone of a user Chunk (one clone per object per copy, as a deep copy makes),
    shifted in place with this operation's size."""
    clone = memo.get(id(chunk))
    if clone is None:
        clone = chunk.__class__(chunk.rank, chunk.buffer, chunk.index, chunk.size)
        memo[id(chunk)] = clone
    clone.index = clone.index * n + i * size
    return clone


class GroupLoadReduce(Op):
    """glre: a switch-channel reduce into a local chunk."""

    __slots__ = ("buffer_type", "buffer_offset", "size", "dst_chunk", "channel_ids", "ctype",
                 "rop")
    name = "glre"

    def __init__(self, buffer_type, buffer_offset, size, dst_chunk, channel_ids, ctype, rop):
        self.buffer_type = buffer_type
        self.buffer_offset = buffer_offset
        self.size = size
        self.dst_chunk = dst_chunk
        self.channel_ids = channel_ids
        self.ctype = ctype
        self.rop = rop

    def fuse(self, other):
        if (other.__class__ is GroupStore and other.name == "gstore"
                and self.buffer_type == other.buffer_type and self.size == other.size
                and self.dst_chunk == other.src_chunk and self.channel_ids == other.channel_ids
                and self.ctype == other.ctype):
            return GroupLoadReduceStore(self.buffer_type, self.size, [self.buffer_offset],
                                        [other.buffer_offset], self.channel_ids, self.ctype,
                                        self.rop)
        return None

    def replicate(self, i, n, memo):
        return GroupLoadReduce(self.buffer_type, self.buffer_offset * n + i * self.size, self.size,
                               _shift_user_chunk(self.dst_chunk, self.size, i, n, memo),
                               list(self.channel_ids), self.ctype, self.rop)

    def to_dict(self):
        return {"name": "glre", "buffer_type": self.buffer_type.value,
                "buffer_offset": self.buffer_offset, "size": self.size,
                "dst_chunk": self.dst_chunk.to_dict(), "channel_ids": self.channel_ids,
                "channel_type": self.ctype, "reduce_op": self.rop}


class GroupStore(Op):
    """gstore / gstorepkt: a local chunk broadcast through a switch channel."""

    __slots__ = ("name", "src_chunk", "buffer_type", "buffer_offset", "size", "channel_ids",
                 "ctype")

    def __init__(self, name, src_chunk, buffer_type, buffer_offset, size, channel_ids, ctype):
        self.name = name
        self.src_chunk = src_chunk
        self.buffer_type = buffer_type
        self.buffer_offset = buffer_offset
        self.size = size
        self.channel_ids = channel_ids
        self.ctype = ctype

    def replicate(self, i, n, memo):
        return GroupStore(self.name, _shift_user_chunk(self.src_chunk, self.size, i, n, memo),
                          self.buffer_type, self.buffer_offset * n + i * self.size, self.size,
                          list(self.channel_ids), self.ctype)

    def to_dict(self):
        return {"name": self.name, "src_buff": [self.src_chunk.to_dict()],
                "dst_buff": [{"switch_channel_id": self.channel_ids[0],
                              "index": self.buffer_offset, "size": self.size}],
                "channel_type": self.ctype}


class GroupLoadReduceStore(Op):
    """glres: glre fused with the gstore of its result."""

    __slots__ = ("buffer_type", "size", "src_index", "dst_index", "channel_ids", "ctype", "rop")
    name = "glres"

    def __init__(self, buffer_type, size, src_index, dst_index, channel_ids, ctype, rop):
        self.buffer_type = buffer_type
        self.size = size
        self.src_index = src_index
        self.dst_index = dst_index
        self.channel_ids = channel_ids
        self.ctype = ctype
        self.rop = rop

    def replicate(self, i, n, memo):
        s = self.size
        return GroupLoadReduceStore(self.buffer_type, s, [v * n + i * s for v in self.src_index],
                                    [v * n + i * s for v in self.dst_index],
                                    list(self.channel_ids), self.ctype, self.rop)

    def to_dict(self):
        ids, s = self.channel_ids, self.size
        # dst_buff entries carry the *source* index, as MSCCL++ writes them.
        return {"name": "glres",
                "src_buff": [{"switch_channel_id": ids[k], "index": v, "size": s}
                             for k, v in enumerate(self.src_index)],
                "dst_buff": [{"switch_channel_id": ids[k], "index": self.src_index[k], "size": s}
                             for k in range(len(self.dst_index))],
                "channel_type": self.ctype, "reduce_op": self.rop}


class Pipeline(Op):
    """The operations of one (rank, tb) inside a LoopIterationContext."""

    __slots__ = ("unit_size", "num_chunks", "ops")
    name = "pipeline"

    def __init__(self, unit_size, num_chunks, ops):
        self.unit_size = unit_size
        self.num_chunks = num_chunks
        self.ops = ops

    def data_sync(self):
        """MSCCL++'s get_data_sync: `before` if the body starts with a nop/barrier or a sync op
        with before, or ends with a nop/barrier (sic); `after` if it ends with a sync op with
        after."""
        ops = self.ops
        if not ops:
            return 0
        result = 0
        for op, mask in ((ops[0], SYNC_BEFORE), (ops[-1], SYNC_AFTER)):
            cls = op.__class__
            if cls is Nop or cls is Barrier:
                result |= SYNC_BEFORE
            elif op.is_sync:
                result |= mask & op.ds
        return result

    def accesses(self):
        out = []
        for op in self.ops:
            out += op.accesses()
        return out

    def fuse(self, other):
        if self.data_sync() & SYNC_AFTER:
            if other.is_sync:
                other.ds &= NOT_BEFORE
            elif other.__class__ is Nop:
                return self
        return None

    def replicate(self, i, n, memo):
        return Pipeline(self.unit_size, self.num_chunks,
                        [op.replicate(i, n, memo) for op in self.ops])

    def to_dict(self):
        return {"name": "pipeline",
                "iter_context": {"unit_size": self.unit_size, "num_chunks": self.num_chunks},
                "ops": [op.to_dict() for op in self.ops]}
