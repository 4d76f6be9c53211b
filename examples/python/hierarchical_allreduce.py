"""GC3's hierarchical AllReduce as §5.1 schedules it (GC3 §2 Figure 3, §5.1).

Intra-node ring ReduceScatters on channel 0, inter-node rings on channel 1, intra-node ring
AllGathers on channel 2, and `parallelize(N)` around the intra-node phases only. Prints the
compiled plan's shape beside the library's allreduce.hierarchical (channels 0/1/2, nothing
parallelized), checks both on thread ranks, and simulates both on DGX A100 nodes:

    PYTHONPATH=build/python /opt/chorus/venv/bin/python examples/python/hierarchical_allreduce.py [--nodes 2 --gpus 8]
"""

import argparse
import collections
import contextlib
import json

import numpy

import chorus
import chorus.lang
from chorus.lang import AllReduce, Buffer, Program, chunk


def ring_reduce_scatter(ranks, offset, count, channel):
    size = len(ranks)
    for r in range(size):
        index = offset + r * count
        c = chunk(ranks[(r + 1) % size], Buffer.input, index, count)
        for step in range(1, size):
            c = chunk(ranks[(step + r + 1) % size], Buffer.input, index, count).reduce(
                c, channel=channel)


def ring_all_gather(ranks, offset, count, channel):
    size = len(ranks)
    for r in range(size):
        index = offset + r * count
        c = chunk(ranks[r], Buffer.input, index, count)
        for step in range(1, size):
            c = c.copy(ranks[(step + r) % size], Buffer.input, index, channel=channel)


def hierarchical_allreduce(nodes, gpus, parallel_intra=True):
    """Figure 3(a) with §5.1's channels; parallel_intra adds `with parallelize(N)` around the
    intra-node ReduceScatters and AllGathers."""
    block = nodes * gpus
    name = "hierarchical_allreduce_gc3"
    with Program(name, AllReduce(block, chunk_factor=block, in_place=True)) as prog:
        scope = prog.parallelize(nodes) if parallel_intra else contextlib.nullcontext()
        local = [[n * gpus + g for g in range(gpus)] for n in range(nodes)]
        cross = [[n * gpus + g for n in range(nodes)] for g in range(gpus)]
        with scope:
            for ranks in local:
                ring_reduce_scatter(ranks, 0, nodes, channel=0)
        for g, ranks in enumerate(cross):
            ring_reduce_scatter(ranks, g * nodes, 1, channel=1)
            ring_all_gather(ranks, g * nodes, 1, channel=1)
        with prog.parallelize(nodes) if parallel_intra else contextlib.nullcontext():
            for ranks in local:
                ring_all_gather(ranks, 0, nodes, channel=2)
    return prog


def shape(plan):
    document = json.loads(plan.to_string("json"))
    ops = collections.Counter(step["op"] for rank in document["ranks"]
                              for tb in rank["threadblocks"] for step in tb["steps"])
    tbs = [len(rank["threadblocks"]) for rank in document["ranks"]]
    return ("chunks %d, threadblocks %d (%d per rank), channels %d, steps %d, ops %s" % (
        plan.chunks_per_loop, sum(tbs), max(tbs), plan.channels, plan.steps,
        ", ".join("%s %d" % item for item in sorted(ops.items()))))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=2)
    parser.add_argument("--gpus", type=int, default=4)
    parser.add_argument("--sizes", default="32K,1M")
    args = parser.parse_args()

    library = chorus.lang.library(
        "allreduce.hierarchical", nodes=args.nodes, gpus_per_node=args.gpus).compile()
    # Without parallelize this program is the library's, instruction for instruction.
    unparallelized = hierarchical_allreduce(args.nodes, args.gpus, parallel_intra=False).compile()
    same = [json.loads(plan.to_string("json")) for plan in (library, unparallelized)]
    for document in same:
        document.pop("name")
    assert same[0] == same[1], "the unparallelized program differs from the library's"
    print("without parallelize: the same IR as the library's allreduce.hierarchical")

    plans = {
        "library allreduce.hierarchical": library,
        "§5.1, parallelize(N) intra-node": hierarchical_allreduce(args.nodes, args.gpus).compile(),
    }
    ranks = args.nodes * args.gpus
    count = 64 * ranks
    inputs = [numpy.arange(count, dtype=numpy.float32) * (r + 1) for r in range(ranks)]
    for label, plan in plans.items():
        print("%s: %s" % (label, shape(plan)))
        result = chorus.run(plan, inputs=inputs)
        assert numpy.allclose(result.outputs[0], sum(inputs))
        for size in args.sizes.split(","):
            prediction = chorus.simulate(plan, topology="dgx-a100", nodes=args.nodes, bytes=size)
            print("  simulated on %d dgx-a100 nodes: %5s in %9.1f us, busbw %6.1f GB/s" % (
                args.nodes, size, prediction.seconds * 1e6, prediction.busbw / 1e9))


if __name__ == "__main__":
    main()
