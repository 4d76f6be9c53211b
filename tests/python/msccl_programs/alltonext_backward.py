# AllToNext backward: rank r's input goes to rank r-1's output. Across nodes the first GPU
# of a node spreads its chunks so that every GPU pair carries one over "IB", and the last
# GPU of the previous node gathers them (named scratch buffers f"s{n}->{n+1}").
# Run: alltonext_backward.py NUM_NODES GPUS_PER_NODE INSTANCES

import argparse

from msccl.language import *
from msccl.topologies.distributed import *
from msccl.topologies import *
from msccl.language.collectives import Collective


class Pipeline(Collective):
    def init_buffers(self):
        rank_buffers = []
        for r in range(self.num_ranks):
            input_buffer = [None] * self.chunk_factor
            output_buffer = [None] * self.chunk_factor
            if r != 0:
                for c in range(self.chunk_factor):
                    input_buffer[c] = Chunk(r, c, r - 1, c)
            rank_buffers.append({Buffer.input: input_buffer, Buffer.output: output_buffer})
        return rank_buffers

    def check(self, prog):
        correct = True
        for r in range(0, self.num_ranks - 1):
            output = prog.buffers[r][Buffer.output]
            for c in range(self.chunk_factor):
                chunk = output[c]
                if chunk is None or chunk.origin_rank != r + 1 or chunk.origin_index != c:
                    print(f"Rank {r} chunk {c} is incorrect should be ({r + 1}, {c}) "
                          f"given {chunk}")
                    correct = False
        return correct


def alltonext_backward(num_nodes, gpus, instances):
    size = num_nodes * gpus
    topology = distributed_fully_connected(fully_connected(gpus), num_nodes, 1)
    collective = Pipeline(size, gpus, False)

    def rank(node, local_rank):
        return node * gpus + local_rank

    with MSCCLProgram("alltonext-backwards", topology, collective, instances):
        for n in range(num_nodes):
            for g in range(gpus):
                r = rank(n, g)
                if r == 0:
                    continue  # the end of the pipeline
                if g != 0:
                    chunk(r, Buffer.input, 0, gpus).copy(r - 1, Buffer.output, 0, ch=g % 2)
                    continue
                buffer = f"s{n}->{n + 1}"
                for ch in range(gpus):
                    c = chunk(r, Buffer.input, ch)
                    if ch == 0:
                        # IB to (n-1, 0), gather onto (n-1, gpus-1).
                        c = c.copy(rank(n - 1, 0), buffer, 0, ch=ch % 2)
                    elif ch == gpus - 1:
                        # Scatter to (n, gpus-1), IB to (n-1, gpus-1).
                        c = c.copy(rank(n, ch), buffer, 0, ch=ch % 2)
                    else:
                        # Scatter to (n, ch), IB to (n-1, ch), gather onto (n-1, gpus-1).
                        c = c.copy(rank(n, ch), buffer, 0, ch=ch % 2)
                        c = c.copy(rank(n - 1, ch), buffer, 0, ch=ch % 2)
                    c.copy(r - 1, Buffer.output, c.get_dst_index(), ch=ch % 2)
        Check()
        XML()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("num_nodes", type=int, help="number of nodes")
    parser.add_argument("gpus_per_node", type=int, help="gpus per node")
    parser.add_argument("instances", type=int, help="number of instances")
    args = parser.parse_args()
    alltonext_backward(args.num_nodes, args.gpus_per_node, args.instances)
