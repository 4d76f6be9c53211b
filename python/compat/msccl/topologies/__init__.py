"""msccl.topologies: msccl-tools' topologies. MSCCLang uses them only to check that every
copy and reduce runs between linked ranks."""

from .distributed import distributed_fully_connected, distributed_hub_and_spoke
from .generic import fully_connected, hub_and_spoke, line, ring, star
from .nvidia import dgx1, dgx_a100, nvlink_only
from .topology import Topology

__all__ = ["Topology", "fully_connected", "ring", "line", "star", "hub_and_spoke", "dgx1",
           "dgx_a100", "nvlink_only", "distributed_fully_connected",
           "distributed_hub_and_spoke"]
