"""Memory, port and switch channels and their one-sided operations."""

from .internal.common import local_operand as _local, sync_bits as _sync_bits, tb_targets
from .internal.errors import fail
from .internal import globals as _state
from .internal.globals import get_program
from .internal.ops import ChanSync, Get, GroupLoadReduce, GroupStore, Put, Reduce
from .internal.types import (BufferType, ChannelType, Chunk, RankGroup, ReduceOperationType,
                             SyncType)
from .thread_block_group import ThreadBlockGroup

__all__ = ["MemoryChannel", "PortChannel", "SwitchChannel", "SyncType", "BufferType",
           "ChannelType", "ReduceOperationType", "Chunk", "RankGroup", "ThreadBlockGroup",
           "get_program"]

# Channel types inside the package are their names (see internal/ops.py).
MEMORY, PORT, SWITCH = "memory", "port", "switch"


class _PeerChannel:
    """A channel owned by ``src_rank`` towards ``dst_rank``; its id is its position among
    ``src_rank``'s channels of the same type (creation order)."""

    channel_type = None  # ChannelType, as in MSCCL++
    _ctype = None  # its name, the key inside the package

    def __init__(self, dst_rank, src_rank):
        prog = get_program()
        num_ranks = prog.num_ranks
        if src_rank >= num_ranks:
            fail("Source rank %s is out of bounds. Number of ranks: %d" % (src_rank, num_ranks))
        if dst_rank >= num_ranks:
            fail("Destination rank %s is out of bounds. Number of ranks: %d"
                 % (dst_rank, num_ranks))
        counts = self._channel_counts
        self.channel_id = counts.get(src_rank, 0)
        counts[src_rank] = self.channel_id + 1
        self.dst_rank = dst_rank
        self.src_rank = src_rank
        prog.gpus[src_rank].channels.setdefault(self._ctype, []).append(dst_rank)

    @classmethod
    def reset(cls):
        cls._channel_counts.clear()

    def __repr__(self):
        return "%s(dst_rank=%r, src_rank=%r)" % (type(self).__name__, self.dst_rank, self.src_rank)

    def _channel(self, prog, tb):
        """The tb-local index of this channel in threadblock ``tb`` (added on first use)."""
        gpu = prog.gpus[self.src_rank]
        tbs = gpu.threadblocks
        tb_obj = tbs[tb] if 0 <= tb < len(tbs) else gpu.tb(tb)
        index = tb_obj.channel_index.get(self._ctype)
        if index is not None:
            local = index.get(self.channel_id)
            if local is not None:
                return local
        return tb_obj.add_channel(self._ctype, self.channel_id)

    def _sync(self, name, tb, data_sync, signal):
        # The hottest call of large programs (signal/wait per peer per tb): kept flat.
        prog = _state._current_program or get_program()
        try:
            ds = data_sync._bits
        except AttributeError:
            ds = _sync_bits(data_sync)
        src, ctype = self.src_rank, self._ctype
        tbs = prog.gpus[src].threadblocks
        tb_obj = tbs[tb] if 0 <= tb < len(tbs) else prog.gpus[src].tb(tb)
        index = tb_obj.channel_index.get(ctype)
        local = index.get(self.channel_id) if index is not None else None
        if local is None:
            local = tb_obj.add_channel(ctype, self.channel_id)
        op = ChanSync(name, {local}, ctype, ds)
        if prog.loop_context is None:
            tb_obj.ops.append(op)
        else:
            prog.add_operation(src, tb, op)
        if signal is not None:
            counts = prog._signal_counts if signal else prog._wait_counts
            key = (src, self.dst_rank, ctype)
            counts[key] = counts.get(key, 0) + 1

    def _check_put(self, dst_chunk, src_chunk, src_scratch=False, dst_scratch=False):
        if src_chunk.rank != self.src_rank:
            fail("Source chunk rank %s does not match current channel source rank %s."
                 % (src_chunk.rank, self.src_rank))
        if src_scratch and src_chunk.buffer != BufferType.scratch:
            fail("Source chunk must be of type scratch.")
        if dst_chunk.rank != self.dst_rank:
            fail("Dst chunk rank %s does not match current channel dst rank %s."
                 % (dst_chunk.rank, self.dst_rank))
        if dst_scratch and dst_chunk.buffer != BufferType.scratch:
            fail("Destination chunk must be of type scratch.")
        if dst_chunk.size != src_chunk.size:
            fail("Destination chunk size %s does not match source chunk size %s."
                 % (dst_chunk.size, src_chunk.size))

    def _put(self, name, dst_chunk, src_chunk, targets):
        """Adds one put-like operation per target threadblock (remote buffer registered
        first, then the channel, as MSCCL++ does)."""
        prog = get_program()
        gpu = prog.gpus[self.src_rank]
        src = _local(src_chunk)
        peer, dst_type = dst_chunk.rank, dst_chunk.buffer._letter
        ctype = self._ctype
        for tb_id, tbg in targets:
            buffer_id = gpu.add_remote_buffer(tb_id, peer, dst_type, ctype)
            channel = self._channel(prog, tb_id)
            dst = (dst_type, dst_chunk.index, dst_chunk.size, buffer_id)
            prog.add_operation(self.src_rank, tb_id, Put(name, [src], [dst], [channel], ctype, tbg))


class MemoryChannel(_PeerChannel):
    """A memory channel of ``src_rank`` to ``dst_rank`` (note the order: destination first)."""

    _channel_counts = {}
    channel_type = ChannelType.memory
    _ctype = MEMORY

    def signal(self, tb, data_sync=SyncType.both, relaxed=False):
        """Signals the peer (rlxsignal with ``relaxed``); ``data_sync`` places nops around it."""
        self._sync("rlxsignal" if relaxed else "signal", tb, data_sync, True)

    def wait(self, tb, data_sync=SyncType.both, relaxed=False):
        """Waits for the peer's signal (rlxwait with ``relaxed``)."""
        self._sync("rlxwait" if relaxed else "wait", tb, data_sync, False)

    def get(self, dst_chunk, src_chunk, tb=None, tb_group=None):
        """Reads the peer's ``src_chunk`` into the local ``dst_chunk`` (sizes are not compared,
        as in MSCCL++)."""
        if dst_chunk.rank != self.src_rank:
            fail("Source chunk rank %s does not match current channel source rank %s."
                 % (dst_chunk.rank, self.src_rank))
        if src_chunk.rank != self.dst_rank:
            fail("Dst chunk rank %s does not match current channel dst rank %s."
                 % (src_chunk.rank, self.dst_rank))
        targets = tb_targets(tb, tb_group)
        prog = get_program()
        gpu = prog.gpus[self.src_rank]
        dst = _local(dst_chunk)
        for tb_id, tbg in targets:
            buffer_id = gpu.add_remote_buffer(tb_id, src_chunk.rank, src_chunk.buffer._letter,
                                              MEMORY)
            channel = self._channel(prog, tb_id)
            src = (src_chunk.buffer._letter, src_chunk.index, src_chunk.size, buffer_id)
            prog.add_operation(self.src_rank, tb_id, Get([src], [dst], [channel], MEMORY, tbg))

    def put(self, dst_chunk, src_chunk, tb=None, tb_group=None):
        """Writes the local ``src_chunk`` into the peer's ``dst_chunk``."""
        self._check_put(dst_chunk, src_chunk)
        self._put("put", dst_chunk, src_chunk,
                  [(tb, None)] if tb is not None else tb_targets(tb, tb_group))

    def read_put_packets(self, dst_chunk, src_chunk, tb=None, tb_group=None):
        """Forwards LL packets from local scratch to the peer's scratch (rppkt)."""
        self._check_put(dst_chunk, src_chunk, src_scratch=True, dst_scratch=True)
        self._put("rppkt", dst_chunk, src_chunk, tb_targets(tb, tb_group, ValueError))

    def put_packets(self, dst_chunk, src_chunk, tb=None, tb_group=None):
        """Writes ``src_chunk`` as LL packets into the peer's scratch (ppkt)."""
        self._check_put(dst_chunk, src_chunk, dst_scratch=True)
        self._put("ppkt", dst_chunk, src_chunk, tb_targets(tb, tb_group))

    def reduce(self, local_src_chunk, remote_src_chunks, tb=None, tb_group=None,
               local_dst_chunk=None, reduce_op=ReduceOperationType.sum):
        """Reduces the peer's ``remote_src_chunks`` into ``local_src_chunk`` (or
        ``local_dst_chunk``) (rre)."""
        if local_dst_chunk is None:
            local_dst_chunk = local_src_chunk
        if local_src_chunk.rank != self.src_rank:
            fail("Destination chunk rank %s does not match current channel source rank %s."
                 % (local_src_chunk.rank, self.src_rank))
        if local_src_chunk.size != local_dst_chunk.size:
            fail("Source chunk size %s does not match destination chunk size %s."
                 % (local_src_chunk.size, local_dst_chunk.size))
        for chunk in remote_src_chunks:
            if chunk.rank != self.dst_rank:
                fail("Source chunk rank %s does not match current channel dst rank %s."
                     % (chunk.rank, self.dst_rank))
            if chunk.size != local_src_chunk.size:
                fail("Source chunk size %s does not match local source chunk size %s."
                     % (chunk.size, local_src_chunk.size))
        targets = [(tb, None)] if tb is not None else tb_targets(tb, tb_group)
        prog = get_program()
        gpu = prog.gpus[self.src_rank]
        src, dst = _local(local_src_chunk), _local(local_dst_chunk)
        rop = reduce_op.value
        for tb_id, tbg in targets:
            remote = []
            for c in remote_src_chunks:
                letter = c.buffer._letter
                remote.append((letter, c.index, c.size,
                               gpu.add_remote_buffer(tb_id, c.rank, letter, MEMORY)))
            channel = self._channel(prog, tb_id)
            prog.add_operation(self.src_rank, tb_id,
                               Reduce([src], [dst], None, remote, None, [channel], None, MEMORY,
                                      rop, tbg))


class PortChannel(_PeerChannel):
    """A port (proxy) channel of ``src_rank`` to ``dst_rank`` (destination first)."""

    _channel_counts = {}
    channel_type = ChannelType.port
    _ctype = PORT

    def signal(self, tb, data_sync=SyncType.both):
        self._sync("signal", tb, data_sync, True)

    def wait(self, tb, data_sync=SyncType.both):
        self._sync("wait", tb, data_sync, False)

    def flush(self, tb, data_sync=SyncType.both):
        self._sync("flush", tb, data_sync, None)

    def put(self, dst_chunk, src_chunk, tb):
        self._check_put(dst_chunk, src_chunk)
        self._put("put", dst_chunk, src_chunk, [(tb, None)])

    def put_with_signal(self, dst_chunk, src_chunk, tb):
        """put, then signal the peer (pws)."""
        self._check_put(dst_chunk, src_chunk)
        self._put("pws", dst_chunk, src_chunk, [(tb, None)])
        get_program().register_signal(self.src_rank, self.dst_rank, PORT)

    def put_with_signal_and_flush(self, dst_chunk, src_chunk, tb):
        """put, signal, flush (pwsf)."""
        self._check_put(dst_chunk, src_chunk)
        self._put("pwsf", dst_chunk, src_chunk, [(tb, None)])
        get_program().register_signal(self.src_rank, self.dst_rank, PORT)

    def put_packets(self, dst_chunk, src_chunk, tb):
        self._check_put(dst_chunk, src_chunk, dst_scratch=True)
        self._put("ppkt", dst_chunk, src_chunk, [(tb, None)])

    def read_put_packets(self, dst_chunk, src_chunk, tb=None, tb_group=None):
        self._check_put(dst_chunk, src_chunk, src_scratch=True, dst_scratch=True)
        self._put("rppkt", dst_chunk, src_chunk, tb_targets(tb, tb_group, ValueError))


class SwitchChannel:
    """An NVLS switch channel over ``rank_list``'s ``buffer_type`` buffers; each member's id
    counts that member's switch channels."""

    _channel_counts = {}

    @classmethod
    def reset(cls):
        cls._channel_counts.clear()

    def __init__(self, rank_list, buffer_type):
        prog = get_program()
        num_ranks = prog.num_ranks
        if not all(rank < num_ranks for rank in rank_list):
            fail("One or more ranks in %s are out of bounds. Number of ranks: %d"
                 % (rank_list, num_ranks))
        self.channel_ids = {}
        for rank in rank_list:
            self.channel_ids[rank] = SwitchChannel._channel_counts.get(rank, 0)
            SwitchChannel._channel_counts[rank] = self.channel_ids[rank] + 1
        self.channel_type = ChannelType.switch
        self.buffer_type = buffer_type
        self.rank_group = RankGroup(len(rank_list), rank_list)
        for rank in rank_list:
            prog.gpus[rank].switch_channels.append((buffer_type, self.rank_group))

    def at_rank(self, rank):
        """The channel as rank ``rank`` uses it (reduce, broadcast, broadcast_packets)."""
        if rank not in self.rank_group.ranks:
            fail("Rank %s is not part of this SwitchChannel's rank group." % (rank,))
        return SwitchChannel.SwitchChannelRankView(self, rank)

    def _check(self, chunk, buffer_offset, size, what):
        prog = get_program()
        if chunk.rank not in self.rank_group.ranks:
            fail("%s chunk rank %s is not part of the rank group %s."
                 % (what, chunk.rank, self.rank_group.ranks))
        if chunk.size != size:
            fail("%s chunk size %s does not match the required size %s." % (what, chunk.size, size))
        for rank in self.rank_group.ranks:
            if self.buffer_type == BufferType.scratch:
                buffer_size = prog.gpus[rank].scratch_chunks
            else:
                buffer_size = prog.buffers[rank][self.buffer_type].size
            if buffer_size < buffer_offset + size:
                fail("Buffer size %s is smaller than required size %s for rank %s."
                     % (buffer_size, buffer_offset + size, rank))
        return prog

    def _channel(self, prog, rank, tb):
        return prog.gpus[rank].tb(tb).add_channel(SWITCH, self.channel_ids[rank])

    def reduce(self, rank, buffer_offset, size, dst_chunk, tb, reduce_op=ReduceOperationType.sum):
        """glre on ``rank``: the group's chunks [buffer_offset, +size) reduced into
        ``dst_chunk``."""
        prog = self._check(dst_chunk, buffer_offset, size, "Destination")
        ids = [self._channel(prog, rank, tb)]
        prog.add_operation(rank, tb, GroupLoadReduce(self.buffer_type, buffer_offset, size,
                                                     dst_chunk, ids, SWITCH, reduce_op.value))

    def broadcast(self, rank, src_chunk, buffer_offset, size, tb):
        """gstore on ``rank``: ``src_chunk`` stored to the group's [buffer_offset, +size)."""
        prog = self._check(src_chunk, buffer_offset, size, "Destination")
        ids = [self._channel(prog, rank, tb)]
        prog.add_operation(rank, tb, GroupStore("gstore", src_chunk, self.buffer_type,
                                                buffer_offset, size, ids, SWITCH))

    def broadcast_packets(self, rank, src_chunk, buffer_offset, size, tb):
        """gstorepkt on ``rank`` (scratch to scratch, LL packets)."""
        prog = get_program()
        if src_chunk.rank not in self.rank_group.ranks:
            fail("Source chunk rank %s is not part of the rank group %s."
                 % (src_chunk.rank, self.rank_group.ranks))
        if src_chunk.buffer != BufferType.scratch:
            fail("Source chunk must be of type scratch for the packet broadcast.")
        if self.buffer_type != BufferType.scratch:
            fail("Destination buffer must be of type scratch for the packet broadcast.")
        if src_chunk.size != size:
            fail("Source chunk size %s does not match the required size %s."
                 % (src_chunk.size, size))
        for r in self.rank_group.ranks:
            buffer_size = prog.gpus[r].scratch_chunks
            if buffer_size < buffer_offset + size:
                fail("Buffer size %s is smaller than required size %s for rank %s."
                     % (buffer_size, buffer_offset + size, r))
        ids = [self._channel(prog, rank, tb)]
        prog.add_operation(rank, tb, GroupStore("gstorepkt", src_chunk, self.buffer_type,
                                                buffer_offset, size, ids, SWITCH))

    class SwitchChannelRankView:
        def __init__(self, channel, rank):
            self._channel = channel
            self._rank = rank

        def reduce(self, buffer_offset, size, dst_chunk, tb, reduce_op=ReduceOperationType.sum):
            return self._channel.reduce(self._rank, buffer_offset, size, dst_chunk, tb, reduce_op)

        def broadcast(self, src_chunk, buffer_offset, size, tb):
            return self._channel.broadcast(self._rank, src_chunk, buffer_offset, size, tb)

        def broadcast_packets(self, src_chunk, buffer_offset, size, tb):
            return self._channel.broadcast_packets(self._rank, src_chunk, buffer_offset, size, tb)
