"""msccl.topologies.generic: fully connected, ring, line, star and hub-and-spoke."""

from .topology import Topology

__all__ = ["fully_connected", "ring", "line", "star", "hub_and_spoke"]


def _matrix(num_nodes, linked):
    return [[1 if src != dst and linked(src, dst) else 0 for src in range(num_nodes)]
            for dst in range(num_nodes)]


def fully_connected(num_nodes):
    """Every pair of ranks linked."""
    return Topology("FullyConnected(n=%d)" % num_nodes, _matrix(num_nodes, lambda s, d: True))


def ring(num_nodes):
    """Rank r linked both ways with r-1 and r+1 (mod num_nodes)."""
    def linked(src, dst):
        return (src - dst) % num_nodes in (1, num_nodes - 1)
    return Topology("Ring(n=%d)" % num_nodes, _matrix(num_nodes, linked))


def line(num_nodes):
    """Rank r linked both ways with r-1 and r+1 (no wrap-around)."""
    return Topology("Line(n=%d)" % num_nodes, _matrix(num_nodes, lambda s, d: abs(s - d) == 1))


def star(num_nodes, non_blocking=True):
    """Rank 0 linked both ways with every other rank; blocking stars share one switch."""
    links = _matrix(num_nodes, lambda s, d: s == 0 or d == 0)
    switches = []
    if not non_blocking:
        points = list(range(1, num_nodes))
        switches = [([0], points, 1, "to_points"), (points, [0], 1, "from_points")]
    return Topology("Star(n=%d)" % num_nodes, links, switches)


def hub_and_spoke(num_nodes):
    """Every pair linked; each rank's sends and receives share one switch port."""
    switches = []
    for node in range(num_nodes):
        others = [other for other in range(num_nodes) if other != node]
        switches.append(([node], others, 1, "node_%d_out" % node))
        switches.append((others, [node], 1, "node_%d_in" % node))
    return Topology("HubAndSpoke(n=%d)" % num_nodes, _matrix(num_nodes, lambda s, d: True),
                    switches)
