"""A new algorithm, not in chorus's library: the bidirectional ring AllReduce.

The buffer is cut into 2R chunks. Chunks 0..R-1 run the ring AllReduce clockwise, chunks
R..2R-1 counter-clockwise, so every link carries data in both directions at once (as NCCL's
rings do on NVLink) and each direction moves half of the bytes. The script compiles and
verifies it, runs it on thread ranks, and compares its simulated time on DGX A100 with the
library's one-way ring:

    PYTHONPATH=build/python /opt/chorus/venv/bin/python examples/python/bidirectional_ring.py
"""

import argparse

import chorus
from chorus.lang import AllReduce, Buffer, Program, chunk, library


def bidirectional_ring(ranks):
    with Program("allreduce_bidirectional_ring",
                 AllReduce(ranks, chunk_factor=2 * ranks, in_place=True)) as program:
        for direction, channel in ((1, 0), (-1, 1)):
            for c in range(ranks):
                index = c if direction == 1 else ranks + c
                node = lambda step: (c + direction * step) % ranks  # noqa: E731
                partial = chunk(node(1), Buffer.input, index)
                for step in range(2, ranks + 1):
                    partial = chunk(node(step), Buffer.input, index).reduce(partial,
                                                                           channel=channel)
                for step in range(1, ranks):
                    partial = partial.copy(node(ranks + step), Buffer.input, index,
                                           channel=channel)
    return program


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=8)
    args = parser.parse_args()

    plan = bidirectional_ring(args.ranks).compile()
    print(plan)
    print("verifier:", plan.verify())
    print("run:", chorus.run(plan, bytes="1M", dtype="float32"))

    ring = library("allreduce.ring", ranks=args.ranks).compile()
    print("simulated on one DGX A100 (%d GPUs):" % args.ranks)
    print("%8s  %14s  %14s" % ("size", "ring busbw", "bidir busbw"))
    for size in ("64K", "1M", "16M", "256M"):
        one = chorus.simulate(ring, topology="dgx-a100", bytes=size)
        two = chorus.simulate(plan, topology="dgx-a100", bytes=size)
        print("%8s  %9.1f GB/s  %9.1f GB/s" % (size, one.busbw / 1e9, two.busbw / 1e9))


if __name__ == "__main__":
    main()
