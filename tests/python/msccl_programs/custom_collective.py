# A custom collective, "shift": rank r's input chunk c must end in output chunk c of rank
# (r + SHIFT) % NUM_GPUS. Written on a ring topology, so chunks hop one neighbour at a time
# through a named scratch buffer "relay" (appending with index -1).
# Run: custom_collective.py NUM_GPUS SHIFT CHUNKS INSTANCES

import argparse

from msccl.language import *
from msccl.topologies import *
from msccl.language.collectives import Collective


class Shift(Collective):
    """Input chunk c of rank r ends at rank (r + shift) % num_ranks, output chunk c."""

    def __init__(self, num_ranks, chunk_factor, inplace, shift):
        Collective.__init__(self, num_ranks, chunk_factor, inplace)
        self.shift = shift

    def init_buffers(self):
        rank_buffers = []
        for r in range(self.num_ranks):
            dst = (r + self.shift) % self.num_ranks
            input_buffer = [Chunk(r, c, dst, c) for c in range(self.chunk_factor)]
            output_buffer = [None] * self.chunk_factor
            rank_buffers.append({Buffer.input: input_buffer, Buffer.output: output_buffer})
        return rank_buffers

    def check(self, prog):
        correct = True
        for r in range(self.num_ranks):
            src = (r - self.shift) % self.num_ranks
            for c in range(self.chunk_factor):
                chunk = prog.buffers[r][Buffer.output][c]
                if chunk is None or (chunk.origin_rank, chunk.origin_index) != (src, c):
                    print(f"Rank {r} chunk {c} is incorrect should be ({src}, {c}) "
                          f"given {chunk}")
                    correct = False
        return correct


def make_collective(num_gpus, shift, chunks):
    return Shift(num_gpus, chunks, False, shift)


def shift_program(num_gpus, shift, chunks, instances):
    topology = ring(num_gpus)
    with MSCCLProgram("shift", topology, make_collective(num_gpus, shift, chunks), instances):
        for r in range(num_gpus):
            c = chunk(r, Buffer.input, 0, chunks)
            for hop in range(1, shift):
                c = c.copy((r + hop) % num_gpus, "relay")
            c.copy(c.get_dst_rank(), Buffer.output, c.get_dst_index())
        Check()
        XML()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("num_gpus", type=int, help="number of gpus")
    parser.add_argument("shift", type=int, help="how many ranks each chunk moves forward")
    parser.add_argument("chunks", type=int, help="chunks per rank")
    parser.add_argument("instances", type=int, help="number of instances")
    args = parser.parse_args()
    shift_program(args.num_gpus, args.shift, args.chunks, args.instances)
