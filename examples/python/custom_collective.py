"""A custom collective defined in Python, with a program that implements it.

"Rotate": every rank's input ends in the output of the rank `shift` places further on. The
collective is given by its pre- and postcondition; chorus checks the program against it
symbolically while tracing, in the verifier and on real data:

    PYTHONPATH=build/python /opt/chorus/venv/bin/python examples/python/custom_collective.py
"""

import argparse

import numpy

import chorus
from chorus.lang import Buffer, Chunk, CustomCollective, Program, chunk


def rotate(ranks, shift, chunks):
    return CustomCollective(
        "rotate", ranks, input_chunks=chunks, output_chunks=chunks,
        # Rank r's output chunk i must hold input chunk i of rank r - shift.
        postcondition=lambda rank, index: Chunk((rank - shift) % ranks, index))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=4)
    parser.add_argument("--shift", type=int, default=2)
    args = parser.parse_args()
    chunks = 2
    collective = rotate(args.ranks, args.shift, chunks)

    # The program sends each half through a different intermediate rank, the way a program
    # spreads traffic over two links.
    with Program("rotate_two_paths", collective) as program:
        for src in range(args.ranks):
            dst = (src + args.shift) % args.ranks
            for half, hop in ((0, 1), (1, -1)):
                relay = (src + hop) % args.ranks
                c = chunk(src, Buffer.input, half)
                if relay != dst:
                    c = c.copy(relay, Buffer.scratch, src * chunks + half)
                c.copy(dst, Buffer.output, half)
    print("postcondition violations:", program.check())
    plan = program.compile()
    print(plan)
    print("verifier:", plan.verify())

    inputs = [numpy.arange(8, dtype=numpy.int64) + 100 * r for r in range(args.ranks)]
    result = chorus.run(plan, inputs=inputs)
    for rank, output in enumerate(result.outputs):
        assert (output == inputs[(rank - args.shift) % args.ranks]).all()
    print("run:", result)

    # A program that forgets the second half is caught before it runs.
    with Program("rotate_half", collective) as wrong:
        for src in range(args.ranks):
            chunk(src, Buffer.input, 0).copy((src + args.shift) % args.ranks, Buffer.output, 0)
    print("a wrong program has %d violations, e.g.: %s" % (len(wrong.check()), wrong.check()[0]))
    try:
        wrong.compile()
    except chorus.CompileError as error:
        print("compile refuses it:", str(error).splitlines()[0])

    prediction = chorus.simulate(plan, topology="dgx1", bytes="16M")
    print("simulated on dgx1: %.1f us" % (prediction.seconds * 1e6))


if __name__ == "__main__":
    main()
