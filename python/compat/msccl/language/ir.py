"""msccl.language.ir: kept for programs that import the enums from here, as msccl-tools'
collectives do (``from msccl.language.ir import Buffer``)."""

from .types import Buffer, ChannelPolicy, ReplicationPolicy, ThreadblockPolicy  # noqa: F401

__all__ = ["Buffer", "ThreadblockPolicy", "ReplicationPolicy", "ChannelPolicy"]
