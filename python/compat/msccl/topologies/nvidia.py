"""msccl.topologies.nvidia: DGX-1, DGX A100 and the NVLink matrix of this machine."""

import subprocess

from .topology import Topology

__all__ = ["dgx1", "dgx_a100", "nvlink_only"]

# DGX-1 NVLink counts (hybrid cube mesh): links[dst][src].
_DGX1 = [
    [0, 2, 1, 1, 2, 0, 0, 0],
    [2, 0, 1, 2, 0, 1, 0, 0],
    [1, 1, 0, 2, 0, 0, 2, 0],
    [1, 2, 2, 0, 0, 0, 0, 1],
    [2, 0, 0, 0, 0, 2, 1, 1],
    [0, 1, 0, 0, 2, 0, 1, 2],
    [0, 0, 2, 0, 1, 1, 0, 2],
    [0, 0, 0, 1, 1, 2, 2, 0],
]


def dgx1():
    """The 8 V100s of a DGX-1: two sockets of 4, not fully connected."""
    return Topology("DGX1", [row[:] for row in _DGX1])


def dgx_a100():
    """The 8 A100s of a DGX A100: all pairs through NVSwitch (12 links each)."""
    return Topology("DGX_A100", [[0 if s == d else 12 for s in range(8)] for d in range(8)])


def nvlink_only(nvidia_smi_topo=None):
    """The NVLink matrix in ``nvidia-smi topo -m`` output (run here when not given)."""
    if nvidia_smi_topo is None:
        nvidia_smi_topo = subprocess.check_output(["nvidia-smi", "topo", "-m"]).decode()
    rows = []
    for line in nvidia_smi_topo.splitlines()[1:]:
        if not line.startswith("GPU"):
            break
        rows.append(line.split("\t")[1:])
    gpus = len(rows)
    return Topology("NVLinkOnly", [[_nvlinks(row[g]) for g in range(gpus)] for row in rows])


def _nvlinks(cell):
    cell = cell.strip()
    return int(cell[2:]) if cell.startswith("NV") else 0
