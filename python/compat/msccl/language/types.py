"""msccl.language.types: the enums MSCCLang programs name (Buffer, the policies)."""

from enum import Enum

__all__ = ["Buffer", "ThreadblockPolicy", "ReplicationPolicy", "InstancePolicy",
           "ChannelPolicy"]


class Buffer(Enum):
    """A rank's input, output and scratch buffers. Any other hashable key (a string, a tuple)
    names a per-rank scratch buffer instead, created by the first copy into it."""

    input = "i"
    output = "o"
    scratch = "s"

    def __str__(self):
        return self.value

    def __lt__(self, other):
        return self.value < other.value


class ThreadblockPolicy(Enum):
    """auto: chorus places every op (the user's ``ch`` stays a channel hint, ``sendtb``/
    ``recvtb`` are ignored, as in msccl-tools); manual: ``sendtb``, ``recvtb`` and ``ch`` are
    passed to chorus as given."""

    auto = "auto"
    manual = "manual"

    def __str__(self):
        return self.value


class ReplicationPolicy(Enum):
    """How instances split the buffers (Azure msccl-tools). chorus always interleaves each
    chunk across instances; the other policies are accepted and give the same results."""

    duplicated = "duplicated"
    interleaved = "interleaved"
    packed = "packed"

    def __str__(self):
        return self.value


InstancePolicy = ReplicationPolicy


class ChannelPolicy(Enum):
    """Accepted for compatibility; chorus's channel pass always chooses channels itself
    (``ch`` hints are honoured under both threadblock policies)."""

    auto = "auto"
    manual = "manual"

    def __str__(self):
        return self.value
