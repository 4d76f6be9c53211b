# Hierarchical (Blue Connect style) AllReduce on NODES x GPUS ranks: ring reduce-scatter
# inside each node, ring reduce-scatter and all-gather across nodes between same-index GPUs,
# then ring all-gather inside each node. --schedule manual pins each phase to channels.
# Run: allreduce_hierarchical.py GPUS_PER_NODE NODES INSTANCES [--protocol P] [--schedule S]

import argparse

from msccl.language import *
from msccl.topologies import *
from msccl.topologies.distributed import *
from msccl.language.collectives import AllReduce


def ring_reduce_scatter(ranks, indices, chan=-1):
    """Chunk indices[k] ends reduced over `ranks` on ranks[k]."""
    size = len(ranks)
    for k, index in enumerate(indices):
        for step in range(size - 1):
            src = ranks[(k + 1 + step) % size]
            dst = ranks[(k + 2 + step) % size]
            chunk(dst, Buffer.input, index).reduce(chunk(src, Buffer.input, index), ch=chan)


def ring_all_gather(ranks, indices, chan=-1):
    """Chunk indices[k], held by ranks[k], is copied to every rank of `ranks`."""
    size = len(ranks)
    for k, index in enumerate(indices):
        for step in range(size - 1):
            c = chunk(ranks[(k + step) % size], Buffer.input, index)
            c.copy(ranks[(k + step + 1) % size], Buffer.input, index, ch=chan)


def hierarchical_allreduce(gpus, nodes, instances, protocol, schedule):
    size = gpus * nodes
    topology = distributed_fully_connected(fully_connected(gpus), nodes, 1)
    collective = AllReduce(size, size, True)
    manual = schedule == "manual"

    def node_ranks(n):
        return [n * gpus + g for g in range(gpus)]

    def peer_ranks(g):
        return [n * gpus + g for n in range(nodes)]

    with MSCCLProgram("hierarchical_allreduce", topology, collective, instances,
                      protocol=protocol, interleaved_replication=False):
        # Local GPU g ends with the node's sum of chunks g*nodes .. g*nodes+nodes-1.
        for n in range(nodes):
            for offset in range(nodes):
                indices = [g * nodes + offset for g in range(gpus)]
                ring_reduce_scatter(node_ranks(n), indices, offset if manual else -1)
        cross = 2 * nodes
        for g in range(gpus):
            indices = [g * nodes + n for n in range(nodes)]
            ring_reduce_scatter(peer_ranks(g), indices, cross + g % 2 if manual else -1)
        for g in range(gpus):
            indices = [g * nodes + n for n in range(nodes)]
            ring_all_gather(peer_ranks(g), indices, cross + g % 2 if manual else -1)
        for n in range(nodes):
            for offset in range(nodes):
                indices = [g * nodes + offset for g in range(gpus)]
                ring_all_gather(node_ranks(n), indices, nodes + offset if manual else -1)
        Check()
        XML()


parser = argparse.ArgumentParser()
parser.add_argument("num_gpus", type=int, help="number of gpus per node")
parser.add_argument("num_nodes", type=int, help="number of nodes")
parser.add_argument("instances", type=int, help="number of instances")
parser.add_argument("--protocol", type=str, default="Simple", choices=["Simple", "LL", "LL128"])
parser.add_argument("--schedule", type=str, default="auto", choices=["auto", "manual"])
args = parser.parse_args()
hierarchical_allreduce(args.num_gpus, args.num_nodes, args.instances, args.protocol,
                       args.schedule)
