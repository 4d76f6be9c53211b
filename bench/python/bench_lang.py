"""Compile-time figures of the DSL in Python next to the C++ DSL (docs/performance.md).

For the ring AllReduce at several rank counts: the time to trace the program written in
Python (chorus.lang, one Python call per copy/reduce), the same program traced by the
library's C++ builder (chorus.lang.library) and, when the msccl compatibility package is on
the path, written as an MSCCLang program (traced by msccl, replayed into chorus.lang); then
compile (verifier off) and verify, each the median of --repeat runs:

    PYTHONPATH=build/python:build/python/compat /opt/chorus/venv/bin/python bench/python/bench_lang.py
"""

import argparse
import importlib.util
import statistics
import sys
import time

from chorus.lang import AllReduce, Buffer, Program, library


def ring_in_python(ranks):
    with Program("allreduce.ring", AllReduce(ranks, ranks, in_place=True)) as program:
        for c in range(ranks):
            partial = program.chunk((c + 1) % ranks, Buffer.input, c)
            for step in range(2, ranks + 1):
                partial = program.chunk((c + step) % ranks, Buffer.input, c).reduce(partial)
            for step in range(1, ranks):
                partial = partial.copy((c + step) % ranks, Buffer.input, c)
    return program


def ring_in_mscclang(ranks):
    from msccl.language import Buffer as MscclBuffer, MSCCLProgram, chunk as msccl_chunk
    from msccl.language.collectives import AllReduce as MscclAllReduce
    from msccl.topologies import fully_connected

    with MSCCLProgram("allreduce.ring", fully_connected(ranks),
                      MscclAllReduce(ranks, ranks, True), 1) as prog:
        for c in range(ranks):
            partial = msccl_chunk((c + 1) % ranks, MscclBuffer.input, c)
            for step in range(2, ranks + 1):
                partial = msccl_chunk((c + step) % ranks, MscclBuffer.input, c).reduce(partial)
            for step in range(1, ranks):
                partial = partial.copy((c + step) % ranks, MscclBuffer.input, c)
    return prog.chorus_program()


def timed(function, repeat):
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--ranks", type=int, nargs="+", default=[8, 64, 128, 256])
    args = parser.parse_args()
    print("| ranks | DSL | trace s | compile s | verify s | total s | steps |")
    print("|---|---|---|---|---|---|---|")
    mscclang = importlib.util.find_spec("msccl") is not None  # build/python/compat on the path
    for ranks in args.ranks:
        builders = [("Python", lambda: ring_in_python(ranks)),
                    ("C++", lambda: library("allreduce.ring", ranks=ranks))]
        if mscclang:
            builders.append(("MSCCLang", lambda: ring_in_mscclang(ranks)))
        for label, build in builders:
            trace, program = timed(build, args.repeat)
            compile_s, plan = timed(lambda: program.compile(verify=False), args.repeat)
            verify_s, report = timed(plan.verify, args.repeat)
            if not report.ok:
                sys.exit("verifier: %s" % report)
            print("| %d | %s | %.3f | %.3f | %.3f | %.3f | %d |" % (
                ranks, label, trace, compile_s, verify_s, trace + compile_s + verify_s,
                plan.steps))


if __name__ == "__main__":
    main()
