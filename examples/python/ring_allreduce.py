"""Ring AllReduce in chorus's Python DSL (GC3 §7.1.1, Figure 3(b)).

Compiles the program with chorus's passes, verifies it, runs it on thread ranks with numpy
arrays and simulates it on DGX A100 nodes:

    PYTHONPATH=build/python /opt/chorus/venv/bin/python examples/python/ring_allreduce.py [--ranks 8]
"""

import argparse

import numpy

import chorus
from chorus.lang import AllReduce, Buffer, Program, chunk


def ring_allreduce(ranks, channels=1):
    """R chunks per rank, in place. Chunk c is reduced along the ring c+1 -> c+2 -> ... -> c,
    then its sum travels on around the ring c -> c+1 -> ... -> c-1."""
    with Program("ring_allreduce", AllReduce(ranks, chunk_factor=ranks, in_place=True)) as prog:
        for c in range(ranks):
            channel = c % channels
            # ReduceScatter: each hop adds the next rank's chunk c into the running sum.
            partial = chunk((c + 1) % ranks, Buffer.input, c)
            for step in range(2, ranks + 1):
                partial = chunk((c + step) % ranks, Buffer.input, c).reduce(partial,
                                                                           channel=channel)
            # AllGather: the sum, now on rank c, is copied around the ring.
            for step in range(1, ranks):
                partial = partial.copy((c + step) % ranks, Buffer.input, c, channel=channel)
    return prog


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=4)
    parser.add_argument("--channels", type=int, default=2)
    args = parser.parse_args()

    program = ring_allreduce(args.ranks, args.channels)
    print("traced %d ops; postcondition violations: %s" % (program.op_count, program.check()))
    plan = program.compile()
    print(plan)
    print("verifier:", plan.verify())

    # Real data in, real data out: every rank contributes its own vector.
    count = 1000
    inputs = [numpy.random.default_rng(r).standard_normal(count).astype(numpy.float32)
              for r in range(args.ranks)]
    result = chorus.run(plan, inputs=inputs)
    assert numpy.allclose(result.outputs[0], sum(inputs), atol=1e-4)
    print("run on %d thread ranks:" % args.ranks, result)

    for size in ("1M", "256M"):
        prediction = chorus.simulate(plan, topology="dgx-a100", bytes=size)
        print("simulated on dgx-a100: %5s in %9.1f us, busbw %6.1f GB/s" % (
            size, prediction.seconds * 1e6, prediction.busbw / 1e9))

    print(plan.to_string("xml")[:400] + "...")


if __name__ == "__main__":
    main()
