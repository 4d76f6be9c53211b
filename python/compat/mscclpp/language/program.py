"""CollectiveProgram: the program being traced, its post-processing and its JSON plan."""

import gc
import json

from .channel import *  # noqa: F401,F403  (MSCCL++'s program module re-exports these)
from .channel import MemoryChannel, PortChannel, SwitchChannel
from .channel import __all__ as _channel_names
from .collectives import *  # noqa: F401,F403
from .collectives import __all__ as _collective_names
from .internal import emit
from .internal.errors import MscclppProgramError, fail
from .internal.globals import set_program
from .internal.gpu import Gpu
from .internal.ops import reset_chunk_dicts
from .internal.types import BufferType
from .rank import Semaphore
from .utils import AlgoSpec, ReplicationPolicy

__all__ = sorted(set(["CollectiveProgram", "Semaphore", "AlgoSpec", "ReplicationPolicy",
                      "set_program", "MscclppProgramError"]
                     + _channel_names + _collective_names))


class CollectiveProgram:
    """An MSCCL++ program: ``with CollectiveProgram(name, collective, num_ranks, ...):`` makes it
    the current program; ``JSON()``/``to_json()`` give its execution plan.

    chorus additions: ``chorus_plan()`` (the plan read by chorus) and ``verify()``.
    """

    def __init__(self, name, collective, num_ranks, instances=1, protocol="Simple",
                 instr_fusion=True, auto_sync=True,
                 replication_policy=ReplicationPolicy.interleaved, reuse_resources=False,
                 num_threads_per_block=1024, use_double_scratch_buffer=False, buffer_alignment=16,
                 min_message_size=0, max_message_size=2**64 - 1):
        self.name = name
        self.collective = collective
        self.num_ranks = num_ranks
        self.instances = instances
        self.protocol = protocol
        self.instr_fusion = instr_fusion
        self.auto_sync = auto_sync
        self.replication_policy = replication_policy
        self.reuse_resources = reuse_resources
        self.num_threads_per_block = num_threads_per_block
        self.use_double_scratch_buffer = use_double_scratch_buffer
        self.buffer_alignment = buffer_alignment
        self.min_message_size = min_message_size
        self.max_message_size = max_message_size
        if protocol != "Simple" and protocol != "LL":
            fail("Given protocol: %s. Must be either Simple, LL" % (protocol,), AssertionError)
        self.buffers = collective.init_buffers()
        if self.buffers is None:
            fail("collective %r defines no buffers (init_buffers() returned None; MSCCL++ fails "
                 "here too)" % (collective.name,), TypeError)
        self.gpus = [Gpu(rank, self.buffers[rank][BufferType.input].size,
                         self.buffers[rank][BufferType.output].size)
                     for rank in range(num_ranks)]
        self.loop_context = None
        self._signal_counts = {}
        self._wait_counts = {}

    @classmethod
    def from_spec(cls, spec):
        """The program an ``AlgoSpec`` describes."""
        return cls(spec.name, spec.collective, spec.world_size, instances=spec.instances,
                   protocol=spec.protocol, instr_fusion=spec.instr_fusion,
                   auto_sync=spec.auto_sync, replication_policy=spec.replication_policy,
                   reuse_resources=spec.reuse_resources,
                   num_threads_per_block=spec.num_threads_per_block,
                   use_double_scratch_buffer=spec.use_double_scratch_buffer,
                   buffer_alignment=spec.buffer_alignment,
                   min_message_size=spec.min_message_size,
                   max_message_size=spec.max_message_size)

    def __enter__(self):
        set_program(self)
        # Tracing allocates hundreds of thousands of small acyclic objects; Python's cyclic
        # collector would scan them again and again (40% of tracing at 64 ranks). It is off
        # inside the block and back as it was after.
        self._gc_was_enabled = gc.isenabled()
        gc.disable()
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        MemoryChannel.reset()
        PortChannel.reset()
        SwitchChannel.reset()
        Semaphore.reset()
        set_program(None)
        if getattr(self, "_gc_was_enabled", False):
            gc.enable()

    # -- called by the DSL's objects -------------------------------------------------------

    def add_operation(self, rank, tb, operation):
        if self.loop_context is not None:
            self.loop_context.add_operation(rank, tb, operation)
        else:
            tbs = self.gpus[rank].threadblocks
            if 0 <= tb < len(tbs):
                tbs[tb].ops.append(operation)
            else:
                self.gpus[rank].tb(tb).ops.append(operation)

    def register_signal(self, src_rank, dst_rank, channel_type):
        key = (src_rank, dst_rank, channel_type)
        self._signal_counts[key] = self._signal_counts.get(key, 0) + 1

    def register_wait(self, src_rank, dst_rank, channel_type):
        key = (src_rank, dst_rank, channel_type)
        self._wait_counts[key] = self._wait_counts.get(key, 0) + 1

    def set_loop_context(self, loop_context):
        if self.loop_context is not None and loop_context is not None:
            fail("Nested Pipelines are not Supported.")
        self.loop_context = loop_context

    # -- post-processing and JSON ------------------------------------------------------------

    def validate_signal_wait_pairing(self):
        """Signals from rank s to d on a channel type must equal d's waits for s on that type
        (counted per rank pair, as MSCCL++ does; chorus's verifier checks each channel)."""
        # The set is built and iterated as MSCCL++'s (channel type names hash as its enum
        # members), so with several mismatches the same one is reported for the same hash seed.
        keys = set(self._signal_counts.keys()) | {(d, s, t) for (s, d, t) in
                                                  self._wait_counts.keys()}
        for src, dst, ctype in keys:
            signals = self._signal_counts.get((src, dst, ctype), 0)
            waits = self._wait_counts.get((dst, src, ctype), 0)
            if signals != waits:
                fail("Signal/Wait mismatch on %s: rank %d issues %d signal(s) to rank %d, but rank "
                     "%d performs %d wait(s) for rank %d. Every signal must be matched by a "
                     "corresponding wait on the peer rank over a channel of the same type."
                     % (ctype, src, signals, dst, dst, waits, src))

    def post_process_operations(self):
        """Fusion, data-sync nops, auto-sync nops and replication, on every threadblock. As in
        MSCCL++, this changes the program: each call (each JSON()/to_json()) runs it again."""
        self.validate_signal_wait_pairing()
        if self.replication_policy != ReplicationPolicy.interleaved:
            fail("replication_policy=%s: only ReplicationPolicy.interleaved works (MSCCL++ fails "
                 "with a TypeError too)" % (self.replication_policy,), TypeError)
        for gpu in self.gpus:
            gpu.post_process(self.instr_fusion, self.auto_sync, self.instances)

    def _to_dict(self):
        """The plan as Python objects, after post-processing (once per call, as to_json).
        Equal chunk entries are one shared dict."""
        self.post_process_operations()
        reset_chunk_dicts()
        return {"name": self.name, "collective": self.collective.name,
                "protocol": self.protocol, "inplace": self.collective.inplace,
                "reuse_resources": self.reuse_resources,
                "gpus": [gpu.to_dict() for gpu in self.gpus],
                "num_threads_per_block": self.num_threads_per_block,
                "use_double_scratch_buffer": self.use_double_scratch_buffer,
                "buffer_alignment": self.buffer_alignment,
                "min_message_size": self.min_message_size,
                "max_message_size": self.max_message_size}

    def to_json(self, indent=2, **kwargs):
        """The plan as JSON text (``json.dumps`` arguments as MSCCL++'s to_json)."""
        plan = self._to_dict()
        if not kwargs and indent.__class__ is int and indent >= 0:
            return emit.dumps(plan, indent)  # the same text as json.dumps, faster
        return json.dumps(plan, indent=indent, **kwargs)

    # -- chorus additions ----------------------------------------------------------------------

    def chorus_plan(self):
        """The plan as chorus reads it (``chorus.parse`` of ``to_json()``): a ``chorus.Plan``
        to verify, simulate or run. Post-processes the program (as ``to_json``)."""
        from .internal import chorus_bridge

        return chorus_bridge.plan_of(self, self.to_json())

    def verify(self):
        """chorus's VerifyReport for ``chorus_plan()``."""
        return self.chorus_plan().verify()
