"""Per-rank state of a program: threadblocks, channels, remote buffers, semaphores; and the
per-GPU post-processing and JSON."""

from .postprocess import add_data_sync, auto_sync, fuse
__all__ = ["Gpu", "ThreadBlock"]


class ThreadBlock:
    """One threadblock: its operations and the GPU-wide channels and remote buffers it uses,
    each given a tb-local index in first-use order."""

    __slots__ = ("id", "ops", "channels", "channel_index", "remote_buffers", "remote_index")

    def __init__(self, tb_id):
        self.id = tb_id
        self.ops = []
        self.channels = {}        # channel type name -> [GPU-wide channel id], first-use order
        self.channel_index = {}   # channel type -> {GPU-wide id: tb-local index}
        self.remote_buffers = {}  # channel type -> [GPU-wide remote buffer id]
        self.remote_index = {}    # channel type -> {GPU-wide id: tb-local id}

    def add_channel(self, ctype, channel_id):
        index = self.channel_index.get(ctype)
        if index is None:
            index = self.channel_index[ctype] = {}
            self.channels[ctype] = []
        local = index.get(channel_id)
        if local is None:
            local = index[channel_id] = len(self.channels[ctype])
            self.channels[ctype].append(channel_id)
        return local

    def add_remote_buffer(self, ctype, buffer_id):
        index = self.remote_index.get(ctype)
        if index is None:
            index = self.remote_index[ctype] = {}
            self.remote_buffers[ctype] = []
        local = index.get(buffer_id)
        if local is None:
            local = index[buffer_id] = len(index)
            self.remote_buffers[ctype].append(buffer_id)
        return local

    def replicate(self, i, n):
        tb = ThreadBlock(self.id * n + i)
        tb.channels = {t: [c * n + i for c in ids] for t, ids in self.channels.items()}
        tb.channel_index = {t: dict(d) for t, d in self.channel_index.items()}
        tb.remote_buffers = {t: list(ids) for t, ids in self.remote_buffers.items()}
        tb.remote_index = {t: dict(d) for t, d in self.remote_index.items()}
        memo = {}
        tb.ops = [op.replicate(i, n, memo) for op in self.ops]
        return tb

    def to_dict(self):
        return {"id": self.id, "ops": [op.to_dict() for op in self.ops],
                "channels": [{"channel_type": t, "channel_ids": ids}
                             for t, ids in self.channels.items() if ids],
                "remote_buffer_refs": [{"access_channel_type": t, "remote_buffer_ids": ids}
                                       for t, ids in self.remote_buffers.items()]}


class Gpu:
    __slots__ = ("id", "input_chunks", "output_chunks", "scratch_chunks", "threadblocks",
                 "channels", "switch_channels", "remote_buffers", "semaphores")

    def __init__(self, rank, input_chunks, output_chunks):
        self.id = rank
        self.input_chunks = input_chunks
        self.output_chunks = output_chunks
        self.scratch_chunks = 0
        self.threadblocks = []
        self.channels = {}         # "memory"/"port" -> [peer], creation order
        self.switch_channels = []  # (buffer type, RankGroup)
        # (peer, buffer letter) -> [GPU-wide id, set of channel type names]
        self.remote_buffers = {}
        self.semaphores = []       # initial values

    def tb(self, tb_id):
        """Threadblock ``tb_id``, creating it and any lower id not yet used."""
        tbs = self.threadblocks
        while len(tbs) <= tb_id:
            tbs.append(ThreadBlock(len(tbs)))
        return tbs[tb_id]

    def add_remote_buffer(self, tb_id, peer, buffer_letter, ctype):
        key = (peer, buffer_letter)
        entry = self.remote_buffers.get(key)
        access = {ctype}
        if entry is None:
            buffer_id = len(self.remote_buffers)
            self.remote_buffers[key] = [buffer_id, access]
        else:
            access |= entry[1]  # the same set operations as MSCCL++: same iteration order
            entry[1] = access
            buffer_id = entry[0]
        tbs = self.threadblocks
        tb = tbs[tb_id] if 0 <= tb_id < len(tbs) else self.tb(tb_id)
        index = tb.remote_index.get(ctype)
        if index is not None:
            local = index.get(buffer_id)
            if local is not None:
                return local
        return tb.add_remote_buffer(ctype, buffer_id)

    def post_process(self, fusion, sync, instances):
        for tb in self.threadblocks:
            ops = tb.ops
            if fusion:
                ops = fuse(ops)
            ops = add_data_sync(ops)
            if sync:
                ops = auto_sync(ops)
            tb.ops = ops
        if instances != 1:
            self.replicate(instances)

    def replicate(self, n):
        self.input_chunks *= n
        self.output_chunks *= n
        self.scratch_chunks *= n
        for t, peers in self.channels.items():
            self.channels[t] = [p for p in peers for _ in range(n)]
        self.switch_channels = [c for c in self.switch_channels for _ in range(n)]
        self.semaphores = [v for v in self.semaphores for _ in range(n)]
        self.threadblocks = [tb.replicate(i, n) for tb in self.threadblocks for i in range(n)]

    def to_dict(self):
        channels = [{"channel_type": t, "connected_to": peers}
                    for t, peers in self.channels.items()]
        channels += [{"channel_type": "switch", "buffer_type": b.value,
                      "rank_groups": [group.to_dict()]} for b, group in self.switch_channels]
        return {"id": self.id, "input_chunks": self.input_chunks,
                "output_chunks": self.output_chunks, "scratch_chunks": self.scratch_chunks,
                "threadblocks": [tb.to_dict() for tb in self.threadblocks],
                "channels": channels,
                "remote_buffers": [{"rank": peer, "type": letter,
                                    "access_channel_types": list(entry[1])}
                                   for (peer, letter), entry in self.remote_buffers.items()],
                "semaphores": [{"init_value": v} for v in self.semaphores]}
