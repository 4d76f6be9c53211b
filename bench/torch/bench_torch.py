"""chorus vs gloo through torch.distributed, in one job: all_reduce, all_gather_into_tensor,
reduce_scatter_tensor and all_to_all_single.

Run from the repository root (see bench/torch/README.md)::

    PYTHONPATH=build/python /opt/chorus/venv/bin/torchrun --nproc_per_node 2 bench/torch/bench_torch.py \\
        [--sizes 1K-64M] [--rounds 3] [--iters-budget 0.2] [--json PATH] [--quick]

The default group is gloo; a second group over the same ranks runs chorus
(torch.distributed.new_group(backend="chorus")). The job makes R rounds, each a sweep over
every collective and size in which both backends are measured back to back, chorus first in
odd rounds and gloo first in even ones. In the first round each collective and size is also
checked (the two backends' results must be equal, else the job aborts) and calibrated: the
number of timed calls is chosen once per backend to take about --iters-budget seconds. A
measurement is a warm-up, a barrier, then the timed calls; its time per call is the median
over the calls, then the maximum over ranks. Rank 0 prints a markdown table: per backend the
median over rounds of the time per call and of busbw (nccl-tests' definitions), and the
median over rounds of the per-round ratio chorus busbw / gloo busbw.
"""

import argparse
import json
import re
import statistics
import sys
import time

import torch
import torch.distributed as dist

import chorus.torch

BACKENDS = ("chorus", "gloo")
COLLECTIVES = ("all_reduce", "all_gather_into_tensor", "reduce_scatter_tensor",
               "all_to_all_single")
DEFAULT_SIZES = "1K-64M"
QUICK_SIZES = "4K,256K,4M"
MIN_ITERS = 3
MAX_ITERS = 2000
UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def parse_size(text):
    match = re.fullmatch(r"(\d+)([KMG]?)", text.strip().upper())
    if not match:
        raise ValueError(f"bad size {text!r} (examples: 4096, 4K, 64M, 1K-64M, 4K,1M)")
    return int(match.group(1)) * UNITS[match.group(2)]


def parse_sizes(text):
    """'1K-64M' (powers of 4 from 1K up to 64M) or a comma list such as '4K,1M'."""
    if "-" in text:
        low, high = (parse_size(part) for part in text.split("-", 1))
        sizes = []
        while low <= high:
            sizes.append(low)
            low *= 4
        return sizes
    return [parse_size(part) for part in text.split(",")]


def format_size(nbytes):
    for suffix in ("G", "M", "K"):
        if nbytes >= UNITS[suffix] and nbytes % UNITS[suffix] == 0:
            return f"{nbytes // UNITS[suffix]}{suffix}"
    return str(nbytes)


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", help=f"bytes per rank buffer (default {DEFAULT_SIZES})")
    parser.add_argument("--rounds", type=int, help="rounds of both backends (default 3)")
    parser.add_argument("--iters-budget", type=float, metavar="SECONDS",
                        help="target seconds per measurement (default 0.2)")
    parser.add_argument("--collectives", default=",".join(COLLECTIVES),
                        help="comma list of collectives (default: all three)")
    parser.add_argument("--json", metavar="PATH", help="write every measurement to PATH")
    parser.add_argument("--quick", action="store_true",
                        help=f"smoke run: sizes {QUICK_SIZES}, 1 round, 0.05 s per measurement")
    args = parser.parse_args()
    quick = args.quick
    try:
        args.sizes = parse_sizes(args.sizes or (QUICK_SIZES if quick else DEFAULT_SIZES))
    except ValueError as error:
        parser.error(str(error))
    if args.rounds is None:
        args.rounds = 1 if quick else 3
    if args.iters_budget is None:
        args.iters_budget = 0.05 if quick else 0.2
    args.collectives = args.collectives.split(",")
    unknown = set(args.collectives) - set(COLLECTIVES)
    if unknown:
        parser.error(f"unknown collective(s) {sorted(unknown)}")
    if args.rounds < 1 or args.iters_budget <= 0:
        parser.error("--rounds takes a whole number >= 1 and --iters-budget seconds > 0")
    return args


def gloo_has_all_gather_into_tensor():
    """torch 1.13's gloo has no _allgather_base; then gloo gathers into views of the output."""
    try:
        dist.all_gather_into_tensor(torch.empty(dist.get_world_size()), torch.zeros(1))
        return True
    except RuntimeError:
        return False


class Case:
    """One collective at one size: its buffers and a call per backend."""

    def __init__(self, collective, nbytes, groups, gloo_into_tensor):
        self.collective, self.nbytes, self.groups = collective, nbytes, groups
        world, rank = dist.get_world_size(), dist.get_rank()
        numel = nbytes // 4
        if numel == 0 or numel % world:
            sys.exit(f"bench_torch: {nbytes} bytes is not a whole number of float32 per rank")
        # Small integers: every sum is exact whatever order a backend adds in, so the two
        # backends must agree bit for bit. The timed in-place sums grow them up to inf; CPUs
        # add inf and nan at full speed (only subnormals are slow, and none arise here).
        generator = torch.Generator().manual_seed(1000 + rank)
        self.input = torch.randint(-8, 8, (numel,), generator=generator).float()
        out_numel = {"all_gather_into_tensor": numel * world,
                     "reduce_scatter_tensor": numel // world}.get(collective, numel)
        self.buffer = torch.empty(numel)
        self.output = torch.empty(out_numel)
        self.gather_views = list(self.output.chunk(world))
        self.gloo_into_tensor = gloo_into_tensor
        self.bus_bytes = self.bus_factor(collective, world) * nbytes

    @staticmethod
    def bus_factor(collective, world):
        """busbw = bus_factor * per-rank bytes / time, as nccl-tests computes it."""
        return {"all_reduce": 2 * (world - 1) / world,
                "all_gather_into_tensor": (world - 1) / world * world,  # of the whole output
                "reduce_scatter_tensor": (world - 1) / world,  # of the whole input
                "all_to_all_single": (world - 1) / world}[collective]

    def reset(self):
        self.buffer.copy_(self.input)

    def call(self, backend):
        group = self.groups[backend]
        if self.collective == "all_reduce":
            dist.all_reduce(self.buffer, group=group)
        elif self.collective == "all_to_all_single":
            dist.all_to_all_single(self.output, self.buffer, group=group)
        elif self.collective == "reduce_scatter_tensor":
            dist.reduce_scatter_tensor(self.output, self.buffer, group=group)
        elif backend == "chorus" or self.gloo_into_tensor:
            dist.all_gather_into_tensor(self.output, self.buffer, group=group)
        else:
            dist.all_gather(self.gather_views, self.buffer, group=group)

    def result(self, backend):
        self.reset()
        self.output.zero_()
        self.call(backend)
        return (self.buffer if self.collective == "all_reduce" else self.output).clone()


# Every tensor gloo sees outlives the groups: torch 1.13's gloo can hang at exit when a worker
# thread frees the last reference to a tensor Python has dropped (pytorch/pytorch#56297).
_SCRATCH = torch.zeros(1, dtype=torch.float64)


def reduce_over_ranks(value, op=dist.ReduceOp.MAX):
    _SCRATCH.fill_(value)
    dist.all_reduce(_SCRATCH, op=op)  # on the default (gloo) group
    return _SCRATCH.item()


def check(case):
    """Compare chorus's result with gloo's on every rank; abort the job if any differs."""
    mismatch = not torch.equal(case.result("chorus"), case.result("gloo"))
    ranks = int(reduce_over_ranks(float(mismatch), dist.ReduceOp.SUM))
    if ranks:
        if dist.get_rank() == 0:
            print(f"bench_torch: ABORT: chorus's {case.collective} of {format_size(case.nbytes)} "
                  f"per rank differs from gloo's on the same input ({ranks} of "
                  f"{dist.get_world_size()} ranks differ)", file=sys.stderr, flush=True)
        sys.exit(1)


def iterations(case, backend, budget):
    """Calls per measurement: about budget seconds, agreed by all ranks (also the warm-up)."""
    calls = 1
    while True:
        case.reset()
        dist.barrier(group=case.groups[backend])
        start = time.perf_counter()
        for _ in range(calls):
            case.call(backend)
        elapsed = reduce_over_ranks(time.perf_counter() - start)
        if elapsed >= 0.01 or calls >= MAX_ITERS:
            return max(MIN_ITERS, min(MAX_ITERS, round(budget * calls / elapsed)))
        calls *= 4


def measure(case, backend, iters):
    """Seconds per call over iters timed calls, (median, mean), each the maximum over ranks."""
    group = case.groups[backend]
    case.reset()
    for _ in range(1 if case.nbytes >= 4 << 20 else 2):
        case.call(backend)
    dist.barrier(group=group)
    times = []
    for _ in range(iters):
        start = time.perf_counter()
        case.call(backend)
        times.append(time.perf_counter() - start)
    return reduce_over_ranks(statistics.median(times)), reduce_over_ranks(statistics.fmean(times))


def main():
    args = parse_args()
    dist.init_process_group("gloo")
    groups = {"gloo": dist.group.WORLD, "chorus": dist.new_group(backend="chorus")}
    rank, world = dist.get_rank(), dist.get_world_size()
    gloo_into_tensor = gloo_has_all_gather_into_tensor()
    log = (lambda *a: print(*a, file=sys.stderr, flush=True)) if rank == 0 else (lambda *a: None)
    log(f"bench_torch: {world} ranks, torch {torch.__version__}, sizes "
        f"{','.join(map(format_size, args.sizes))}, {args.rounds} round(s), "
        f"~{args.iters_budget} s per measurement")

    started = time.perf_counter()
    cells = [(c, n) for c in args.collectives for n in args.sizes]
    iters, times, algorithms, records = {}, {}, {}, []
    # A round is a whole sweep, so the rounds of one cell lie a sweep apart: a slow spell of
    # the machine (seconds long on a shared 2-core box) then spoils one round, not all of them.
    for r in range(args.rounds):
        for collective, nbytes in cells:
            case = Case(collective, nbytes, groups, gloo_into_tensor)
            cell = (collective, nbytes)
            if r == 0:
                check(case)
                for backend in BACKENDS:
                    iters[cell, backend] = iterations(case, backend, args.iters_budget)
                    times[cell, backend] = []
            for backend in BACKENDS if r % 2 == 0 else BACKENDS[::-1]:
                seconds, mean = measure(case, backend, iters[cell, backend])
                times[cell, backend].append(seconds)
                records.append({"collective": collective, "bytes": nbytes, "ranks": world,
                                "backend": backend, "round": r + 1,
                                "iters": iters[cell, backend], "time_us": seconds * 1e6,
                                "mean_time_us": mean * 1e6,
                                "busbw_gbps": case.bus_bytes / seconds / 1e9})
            algorithms[cell] = chorus.torch.last_plan(groups["chorus"])[0]
        log(f"  round {r + 1}/{args.rounds} done ({time.perf_counter() - started:.0f} s)")

    rows = []
    for collective, nbytes in cells:
        cell = (collective, nbytes)
        bus_bytes = Case.bus_factor(collective, world) * nbytes
        chorus_t, gloo_t = times[cell, "chorus"], times[cell, "gloo"]
        row = {"collective": collective, "bytes": nbytes, "size": format_size(nbytes),
               "chorus_algorithm": algorithms[cell],
               "ratio": statistics.median(g / c for c, g in zip(chorus_t, gloo_t))}
        for backend in BACKENDS:
            row[f"{backend}_us"] = statistics.median(times[cell, backend]) * 1e6
            row[f"{backend}_busbw"] = statistics.median(
                bus_bytes / t / 1e9 for t in times[cell, backend])
        rows.append(row)

    if rank == 0:
        print(f"\nchorus vs gloo, {world} ranks, torch {torch.__version__}; median of "
              f"{args.rounds} round(s); busbw in GB/s as nccl-tests\n")
        print("| collective | size | chorus us | gloo us | chorus busbw | gloo busbw "
              "| chorus/gloo | chorus algorithm |")
        print("|---|---:|---:|---:|---:|---:|---:|---|")
        for row in rows:
            print("| {collective} | {size} | {chorus_us:.1f} | {gloo_us:.1f} | {chorus_busbw:.3f} "
                  "| {gloo_busbw:.3f} | {ratio:.2f} | {chorus_algorithm} |".format(**row))
        log(f"bench_torch: done in {time.perf_counter() - started:.0f} s")
        if args.json:
            with open(args.json, "w") as out:
                json.dump({"ranks": world, "torch": torch.__version__, "rounds": args.rounds,
                           "iters_budget_s": args.iters_budget, "summary": rows,
                           "measurements": records}, out, indent=1)
    dist.destroy_process_group(groups["chorus"])
    dist.destroy_process_group()  # while the last case's buffers are still alive


if __name__ == "__main__":
    main()
