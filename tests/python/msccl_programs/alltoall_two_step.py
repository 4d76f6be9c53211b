# Two-step AllToAll on NODES x GPUS ranks. Step 1 gathers, on local GPU g2, every chunk its
# node sends to GPU g2 of each other node n2 (named scratch buffer f"copy_{n2}"); step 2
# sends each gathered block over "IB" in one copy. Chunks within a node go directly.
# Run: alltoall_two_step.py NUM_NODES GPUS_PER_NODE [--protocol Simple|LL|LL128]

import argparse

from msccl.language import *
from msccl.topologies import *
from msccl.language.collectives import AllToAll


def alltoall_two_step(num_nodes, gpus_per_node, protocol):
    num_ranks = num_nodes * gpus_per_node
    topology = fully_connected(num_ranks)
    collective = AllToAll(num_ranks, 1, inplace=False)

    def rank_of(node, gpu):
        return node * gpus_per_node + gpu

    with MSCCLProgram("alltoall_two_step", topology, collective, 1, protocol=protocol):
        for n1 in range(num_nodes):
            for hop in range(1, num_nodes):
                n2 = (n1 + hop) % num_nodes
                # Gather: GPU g2 of n1 collects, in order of g1, the chunks for (n2, g2).
                for g1 in range(gpus_per_node):
                    for g2 in range(gpus_per_node):
                        c = chunk(rank_of(n1, g1), Buffer.input, rank_of(n2, g2))
                        c.copy(rank_of(n1, g2), f"copy_{n2}")
            for hop in range(1, num_nodes):
                n2 = (n1 + hop) % num_nodes
                # IB copy: one block of gpus_per_node chunks per GPU pair.
                for g in range(gpus_per_node):
                    r = rank_of(n1, g)
                    c = chunk(r, f"copy_{n2}", 0, gpus_per_node)
                    channel = ((n1 + n2) % gpus_per_node) * 2 + r % 2 + 2
                    c.copy(rank_of(n2, g), Buffer.output, c.get_dst_index(), ch=channel)
        # Chunks that stay within a node.
        for r in range(num_ranks):
            node = r // gpus_per_node
            for g in range(gpus_per_node):
                c = chunk(r, Buffer.input, rank_of(node, g))
                c.copy(c.get_dst_rank(), Buffer.output, c.get_dst_index())
        Check()
        XML()


parser = argparse.ArgumentParser()
parser.add_argument("num_nodes", type=int, help="number of nodes")
parser.add_argument("gpus_per_node", type=int, help="gpus per node")
parser.add_argument("--protocol", type=str, default="Simple", choices=["Simple", "LL", "LL128"])
args = parser.parse_args()
alltoall_two_step(args.num_nodes, args.gpus_per_node, args.protocol)
