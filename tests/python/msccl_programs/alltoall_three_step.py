# Three-step AllToAll on NODES x GPUS ranks: (1) each GPU sends the chunks for a remote node
# to the one local GPU handling that node pair, into a scratch buffer named by the pair
# (a tuple); (2) that GPU sends the whole group over "IB", split over IB_CONNECTIONS copies;
# (3) the receiving GPU scatters each chunk to its final rank. The collective's chunk factor
# is INSTANCES (msccl-tools' convention in this example); the program runs one instance.
# Run: alltoall_three_step.py NUM_NODES GPUS_PER_NODE INSTANCES [--ib_connections K]

import argparse

from msccl.language import *
from msccl.topologies import *
from msccl.language.collectives import AllToAll


def alltoall_three_step(num_nodes, gpus_per_node, instances, ib_connections):
    num_ranks = num_nodes * gpus_per_node
    topology = fully_connected(num_ranks)
    collective = AllToAll(num_ranks, instances, inplace=False)

    def rank_of(node, gpu):
        return node * gpus_per_node + gpu

    def cross_node_gpus(n1, n2):
        """The GPUs of n1 and n2 that carry the n1 -> n2 traffic."""
        def local(a, b):
            return (b if a > b else b - 1) % gpus_per_node
        return rank_of(n1, local(n1, n2)), rank_of(n2, local(n2, n1))

    with MSCCLProgram("alltoall_three_step", topology, collective, 1):
        ib_chunks = {}  # (n1, n2) -> one reference over everything gathered for that pair
        for n1 in range(num_nodes):
            for g1 in range(gpus_per_node):
                r1 = rank_of(n1, g1)
                for ch in range(instances):
                    for n2 in range(num_nodes):
                        if n1 != n2:
                            first = n2 * gpus_per_node * instances + ch * gpus_per_node
                            c = chunk(r1, Buffer.input, first, gpus_per_node)
                            gather_rank, _ = cross_node_gpus(n1, n2)
                            c = c.copy(gather_rank, buffer=(n1, n2), ch=ch * 2)
                            key = (n1, n2)
                            ib_chunks[key] = ib_chunks[key].group(c) if key in ib_chunks else c
                        else:
                            for g2 in range(gpus_per_node):
                                c = chunk(r1, Buffer.input, rank_of(n2, g2) * instances + ch)
                                c.copy(rank_of(n2, g2), buffer=Buffer.output,
                                       index=c.get_dst_index(), ch=ch * 2)
        for (n1, n2), ib_chunk in ib_chunks.items():
            _, scatter_rank = cross_node_gpus(n1, n2)
            for k, c in enumerate(ib_chunk.split(ib_connections)):
                ib_channel = c.rank % 2 if ib_connections == 1 else k
                c = c.copy(scatter_rank, buffer=(n1, n2), ch=ib_channel)
                for piece in c.split(c.size):
                    piece.copy(piece.get_dst_rank(), buffer=Buffer.output,
                               index=piece.get_dst_index(), ch=k * 2 + 1)
        Check()
        XML()


parser = argparse.ArgumentParser()
parser.add_argument("num_nodes", type=int, help="number of nodes")
parser.add_argument("gpus_per_node", type=int, help="gpus per node")
parser.add_argument("instances", type=int, help="chunks per rank pair")
parser.add_argument("--ib_connections", type=int, default=-1,
                    help="copies per IB transfer (default: instances)")
args = parser.parse_args()
alltoall_three_step(args.num_nodes, args.gpus_per_node, args.instances,
                    args.instances if args.ib_connections == -1 else args.ib_connections)
