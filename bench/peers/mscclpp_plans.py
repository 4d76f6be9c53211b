#!/usr/bin/env python3
"""MSCCL++'s own execution plans, verified by chorus, and mutants of them.

Takes a microsoft/mscclpp checkout and:
  1. collects the plans it ships (test/execution-files/, test/executor-tests/execution-plans/);
  2. runs every program of its DSL tests (python/mscclpp/language/tests/) and default
     algorithms (python/mscclpp/default_algos/, the configurations of python/mscclpp/__main__.py)
     to emit their plans, with the arguments listed in DSL_PROGRAMS;
  3. runs `chorus verify` on each plan, and `chorus run` on thread ranks and on shm and tcp
     processes and `chorus simulate` (dgx-h100 nodes enough for its ranks, 1 MiB) on each it reads, and prints a Markdown table
     (docs/ir.md "MSCCL++'s own plans") and a count of the plans that verify and simulate;
  4. mutates every plan that verifies clean: drops one signal (of one channel), drops one
     wait, moves one remote destination of a put (or packet put) to the next chunk of the same
     buffer (a put into a buffer the owner still uses), or drops one remote destination of a
     packet put (ppkt, rppkt, respkt, recspkt: packets the reader then waits for); per plan and kind at most MUTANTS_PER_KIND mutants,
     evenly spaced over all of them; and counts how many mutants chorus reports.

  bench/peers/mscclpp_plans.py --mscclpp DIR --dsl-python PY [--build build] [--keep OUT]

PY must import sortedcontainers (MSCCL++'s language package needs nothing else); the script puts
a shim package on its PYTHONPATH so that `import mscclpp.language` does not load MSCCL++'s C++
extension, which a checkout without a build lacks.
"""

import argparse
import copy
import glob
import json
import os
import subprocess
import sys
import tempfile

# (program under python/mscclpp/, arguments); the multi-node programs hard-code two nodes.
DSL_PROGRAMS = [
    ("language/tests/multi_node/allgather.py", "--gpus_per_node 8"),
    ("language/tests/multi_node/allgather_pkt.py", "--gpus_per_node 8"),
    ("language/tests/multi_node/reducescatter.py", "--gpus_per_node 8"),
    ("language/tests/multi_node/reducescatter_pkt.py", "--gpus_per_node 8"),
    ("language/tests/multi_node/allgather_tbg.py",
     "--num_gpus 16 --gpus_per_node 8 --tbg_size 4"),
    ("language/tests/multi_node/send_recv.py", "--nnodes 2 --gpus_per_node 8"),
    ("default_algos/allgather_multi_nodes.py", "--num_gpus 16 --gpus_per_node 8"),
    ("default_algos/allgather_multi_nodes.py", "--num_gpus 16 --gpus_per_node 8 --in_place"),
    ("default_algos/allreduce_multi_nodes.py", "--num_gpus 16 --gpus_per_node 8 --tbg 1"),
]


MUTANTS_PER_KIND = 25


def run(cmd, env=None, timeout=300):
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)


def dsl_programs(root):
    """Every unit and single-node DSL test (argparse defaults, 8 GPUs where asked), then the
    multi-node programs and default algorithms above."""
    tests = os.path.join(root, "python/mscclpp/language/tests")
    out = []
    for kind in ("unit_tests", "single_node"):
        for path in sorted(glob.glob(os.path.join(tests, kind, "**/*.py"), recursive=True)):
            with open(path) as f:
                args = "--num_gpus 8" if "--num_gpus" in f.read() else ""
            out.append((os.path.relpath(path, os.path.join(root, "python/mscclpp")), args))
    return out + DSL_PROGRAMS


def emit_plans(root, python, outdir):
    """Runs each DSL program; returns {plan name: path} and {plan name: error}."""
    shim = os.path.join(outdir, "shim", "mscclpp")
    os.makedirs(shim, exist_ok=True)
    with open(os.path.join(shim, "__init__.py"), "w") as f:
        f.write("__path__ = [%r]\n" % os.path.join(root, "python/mscclpp"))
    env = dict(os.environ, PYTHONPATH=os.path.dirname(shim))
    plans, errors = {}, {}
    for program, args in dsl_programs(root):
        name = "dsl:" + program.replace("language/tests/", "").replace(".py", "")
        if args:
            name += " " + args
        script = os.path.join(root, "python/mscclpp", program)
        extra = [] if "unit_tests" in program else ["--name", "p"]
        result = run([python, script] + extra + args.split(), env=env)
        try:
            json.loads(result.stdout)
        except ValueError:
            lines = [l for l in result.stderr.strip().splitlines() if l.strip()]
            errors[name] = lines[-1][:150] if lines else "no output"
            continue
        path = os.path.join(outdir, "plan%03d.json" % len(plans))
        with open(path, "w") as f:
            f.write(result.stdout)
        plans[name] = path
    # The default algorithm configurations of python/mscclpp/__main__.py.
    driver = (
        "import runpy, json\n"
        "cfgs = runpy.run_path(%r, run_name='x')['default_algo_configs']\n"
        "print(json.dumps({c['filename']: json.loads(c['function'](c['spec'], "
        "**c.get('additional_kwargs', {})).to_json()) for c in cfgs}))\n"
        % os.path.join(root, "python/mscclpp/__main__.py"))
    result = run([python, "-c", driver], env=env)
    try:
        for filename, plan in json.loads(result.stdout).items():
            path = os.path.join(outdir, "plan%03d.json" % len(plans))
            with open(path, "w") as f:
                json.dump(plan, f)
            plans["dsl:__main__ " + filename] = path
    except ValueError:
        errors["dsl:__main__"] = (result.stderr.strip().splitlines() or ["no output"])[-1][:150]
    return plans, errors


def verify(chorus, path, everything=False):
    """(exit code, first finding or error line; every line with `everything`)."""
    result = run([chorus, "verify", path])
    text = (result.stdout + result.stderr).strip()
    lines = [l for l in text.splitlines() if l.strip()]
    if result.returncode == 0:
        return 0, "ok"
    if everything:
        return result.returncode, text
    detail = lines[1] if result.returncode == 1 and len(lines) > 1 else lines[-1]
    return result.returncode, detail.split(": ", 1)[-1][:170]


def names_a_data_race_or_deadlock(findings):
    """More than an unbalanced channel: two unordered accesses, an access not ordered before
    its owner's launch ends, or a threadblock that never finishes."""
    return ("race on " in findings or "nothing orders it before" in findings
            or "deadlock:" in findings or "already wrote in this launch" in findings
            or "never reads in this launch" in findings or "as they are, but" in findings)


def run_plan(chorus, path, transport="thread"):
    """`chorus run` on thread ranks or shm processes: "correct", "ran (unchecked: custom
    collective)" or why not."""
    result = run([chorus, "run", path, "--transport", transport, "--bytes", "256K",
                  "--timeout", "10"])
    text = (result.stdout + result.stderr).strip()
    if result.returncode == 0 and "correct" in text:
        return "correct"
    if result.returncode == 0 and "NOT checked" in text:
        return "ran (not checked: custom collective)"
    return "exit %d: %s" % (result.returncode, text.splitlines()[-1][:150] if text else "")


def simulate_plan(chorus, path):
    """`chorus simulate` on dgx-h100 at 1 MiB: the predicted time ("12.34 us") or why not."""
    with open(path) as f:
        ranks = len(json.load(f).get("gpus", []))
    nodes = max(1, -(-ranks // 8))
    result = run([chorus, "simulate", path, "--topology", "dgx-h100", "--nodes", str(nodes),
                  "--bytes", "1M"])
    text = (result.stdout + result.stderr).strip()
    rows = [l.split() for l in text.splitlines() if l.strip() and not l.startswith("#")]
    if result.returncode == 0 and rows and len(rows[0]) > 2:
        return "%s us" % rows[0][2]
    return "exit %d: %s" % (result.returncode, text.splitlines()[-1][:120] if text else "")


def ops_of(tb):
    """(position, op) for each op of a threadblock, inside pipeline bodies too: position (o,) or,
    in the body of the pipeline at o, (o, j)."""
    for o, op in enumerate(tb["ops"]):
        if op.get("name") == "pipeline":
            for j, inner in enumerate(op.get("ops", [])):
                yield (o, j), inner
        else:
            yield (o,), op


def mutation_sites(plan):
    """(kind, gpu, threadblock, op position, entry) for each dropped signal (one channel of a
    signal op), dropped wait, misdirected put (one remote destination of a put, reduce-send or
    packet put) and dropped packet write (one remote destination of a packet put)."""
    for g, gpu in enumerate(plan["gpus"]):
        for t, tb in enumerate(gpu["threadblocks"]):
            for o, op in ops_of(tb):
                name = op.get("name")
                if name in ("signal", "rlxsignal", "wait", "rlxwait"):
                    kind = "drop signal" if "signal" in name else "drop wait"
                    for c in range(len(op["channel_ids"])):
                        yield kind, g, t, o, c
                if name in ("put", "pws", "pwsf", "res", "rres") + PACKET_PUTS:
                    for d, dst in enumerate(op.get("dst_buff", [])):
                        if "buffer_id" in dst:
                            yield "put into a live buffer", g, t, o, d
                            if name in PACKET_PUTS:
                                yield "drop a packet write", g, t, o, d


PACKET_PUTS = ("ppkt", "rppkt", "respkt", "recspkt")


def mutate(plan, site):
    kind, g, t, position, entry = site
    m = copy.deepcopy(plan)
    ops = m["gpus"][g]["threadblocks"][t]["ops"]
    if len(position) == 2:  # in a pipeline's body
        ops = ops[position[0]]["ops"]
    o = position[-1]
    if kind == "put into a live buffer":
        ops[o]["dst_buff"][entry]["index"] += 1
        return m
    if kind == "drop a packet write":
        op = ops[o]
        # ppkt pairs src_buff[i] with dst_buff[i] and a port channel with each destination.
        if op["name"] == "ppkt":
            del op["src_buff"][entry]
        if op.get("channel_type") == "port":
            del op["channel_ids"][entry]
        del op["dst_buff"][entry]
        if not any("buffer_id" in d for d in op["dst_buff"]) and op["name"] in ("ppkt", "rppkt"):
            del ops[o]
        return m
    del ops[o]["channel_ids"][entry]
    if not ops[o]["channel_ids"]:
        del ops[o]
    return m


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mscclpp", required=True, help="microsoft/mscclpp checkout")
    parser.add_argument("--dsl-python", required=True, help="interpreter with sortedcontainers")
    parser.add_argument("--build", default="build", help="chorus build directory")
    parser.add_argument("--keep", help="write the plans here instead of a temporary directory")
    args = parser.parse_args()
    chorus = os.path.abspath(os.path.join(args.build, "chorus"))
    outdir = args.keep or tempfile.mkdtemp(prefix="mscclpp-plans-")
    os.makedirs(outdir, exist_ok=True)

    plans = {}
    for sub in ("test/execution-files", "test/executor-tests/execution-plans"):
        for path in sorted(glob.glob(os.path.join(args.mscclpp, sub, "*.json"))):
            plans["shipped:" + os.path.relpath(path, args.mscclpp)] = path
    emitted, errors = emit_plans(args.mscclpp, args.dsl_python, outdir)
    plans.update(emitted)

    print("| plan | chorus verify | chorus run (thread ranks) | chorus run (shm processes) "
          "| chorus run (tcp processes) | chorus simulate (dgx-h100, 1 MiB) |")
    print("|---|---|---|---|---|---|")
    clean = []
    simulated = {0: [0, 0], 1: [0, 0]}  # verify exit code -> [plans, simulated]
    runs = {0: [0, 0, 0], 1: [0, 0, 0]}  # verify exit code -> correct on threads, shm, tcp
    for name, path in plans.items():
        code, detail = verify(chorus, path)
        prefix = {0: "", 1: "finding: ", 2: "refused: "}.get(code, "exit %d: " % code)
        ran = run_plan(chorus, path) if code in (0, 1) else ""
        ran_shm = run_plan(chorus, path, "shm") if code in (0, 1) else ""
        ran_tcp = run_plan(chorus, path, "tcp") if code in (0, 1) else ""
        if code in runs:
            runs[code][0] += ran == "correct"
            runs[code][1] += ran_shm == "correct"
            runs[code][2] += ran_tcp == "correct"
        predicted = simulate_plan(chorus, path) if code in (0, 1) else ""
        if code in simulated:
            simulated[code][0] += 1
            simulated[code][1] += predicted.endswith(" us")
        print("| %s | %s%s | %s | %s | %s | %s |" % (name, prefix, detail, ran, ran_shm, ran_tcp,
                                                   predicted))
        if code == 0:
            clean.append(path)
    for name, error in errors.items():
        print("| %s | the DSL fails: %s | | | | |" % (name, error))
    print()
    print("simulated: %d of %d plans that verify ok, %d of %d plans with findings" % (
        simulated[0][1], simulated[0][0], simulated[1][1], simulated[1][0]))
    print("correct on thread ranks / shm processes / tcp processes: %d / %d / %d of the %d plans "
          "that verify ok (the others have no postcondition to check), %d / %d / %d of the %d "
          "with findings" % (runs[0][0], runs[0][1], runs[0][2], simulated[0][0], runs[1][0],
                             runs[1][1], runs[1][2], simulated[1][0]))

    found, total, missed, specific = {}, {}, [], {}
    for path in clean:
        with open(path) as f:
            plan = json.load(f)
        every = {}
        for site in mutation_sites(plan):
            every.setdefault(site[0], []).append(site)
        # At most MUTANTS_PER_KIND of each kind per plan, evenly spaced (a 16-rank plan has
        # thousands of signals).
        sampled = [sites[i * len(sites) // min(len(sites), MUTANTS_PER_KIND)]
                   for sites in every.values() for i in range(min(len(sites), MUTANTS_PER_KIND))]
        for site in sampled:
            kind = site[0]
            if kind == "put into a live buffer" and plan["collective"] in ("test", "custom"):
                continue  # no postcondition: a moved put may be harmless
            with tempfile.NamedTemporaryFile("w", suffix=".json", dir=outdir, delete=False) as f:
                json.dump(mutate(plan, site), f)
            code, findings = verify(chorus, f.name, everything=True)
            os.unlink(f.name)
            if code == 2:
                continue  # the moved index left the buffer: not a plan, not counted
            total[kind] = total.get(kind, 0) + 1
            found[kind] = found.get(kind, 0) + (code == 1)
            specific[kind] = specific.get(kind, 0) + (
                code == 1 and names_a_data_race_or_deadlock(findings))
            if code != 1:
                missed.append("%s: %s at gpu %d tb %d op %s entry %d" % (
                    (plan["name"],) + site[:3] + (".".join(map(str, site[3])), site[4])))
    print()
    print("| mutation | mutants | reported by chorus verify | with a data race or deadlock |")
    print("|---|---|---|---|")
    for kind in sorted(total):
        print("| %s | %d | %d | %d |" % (kind, total[kind], found[kind], specific[kind]))
    for line in missed:
        print("not reported:", line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
