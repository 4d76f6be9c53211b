"""msccl.topologies.distributed: copies of a node topology joined by remote links."""

from .topology import Topology

__all__ = ["distributed_fully_connected", "distributed_hub_and_spoke"]


def _links(local, copies, remote_bw):
    n = local.num_nodes()
    return [[remote_bw if src // n != dst // n else local.links[dst % n][src % n]
             for src in range(n * copies)] for dst in range(n * copies)]


def _switches(local, copies):
    n = local.num_nodes()
    return [([s + i * n for s in srcs], [d + i * n for d in dsts], bw,
             "copy_%d_%s_local" % (i, name))
            for srcs, dsts, bw, name in local.switches for i in range(copies)]


def distributed_fully_connected(local_topology, num_copies, remote_bw):
    """``num_copies`` nodes of ``local_topology``; every cross-node pair linked."""
    return Topology("DistributedFullyConnected(local=%s,copies=%d,bw=%s)"
                    % (local_topology.name, num_copies, remote_bw),
                    _links(local_topology, num_copies, remote_bw),
                    _switches(local_topology, num_copies))


def distributed_hub_and_spoke(local_topology, num_copies, remote_bw):
    """As distributed_fully_connected, with each node's remote traffic through one switch
    per direction."""
    n = local_topology.num_nodes()
    switches = _switches(local_topology, num_copies)
    for i in range(num_copies):
        local = [j + i * n for j in range(n)]
        remote = [k for k in range(n * num_copies) if k // n != i]
        switches.append((local, remote, remote_bw, "copy_%d_out_remote" % i))
        switches.append((remote, local, remote_bw, "copy_%d_in_remote" % i))
    return Topology("DistributedHubAndSpoke(local=%s,copies=%d,bw=%s)"
                    % (local_topology.name, num_copies, remote_bw),
                    _links(local_topology, num_copies, remote_bw), switches)
