#!/usr/bin/env python3
"""msccl-tools' MSCCLang examples, compiled by msccl-tools and by chorus's msccl package, side
by side.

For every program under examples/mscclang/ of a microsoft/msccl-tools checkout (with the
arguments in EXAMPLES: its README and tests give none, so they are the sizes each program's
argparse and loops are written for), this runs the program twice, as a user would: with
msccl-tools' own package and with chorus's (python/compat/msccl). Each XML printed is verified
by `chorus verify` and run on thread ranks by `chorus run`, which checks every output element. Threadblocks and steps (all <step> elements, total and the most in one
threadblock) are counted from both XMLs. Prints a Markdown table; see docs/python.md.

  bench/peers/msccl_parity.py --msccl-tools DIR --reference-python PY [--build build]

PY must import msccl-tools' dependencies (lxml and the rest of its requirements.txt); DIR is put
first on its PYTHONPATH. chorus's side runs with this script's interpreter unless
--chorus-python says otherwise.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile

# (program under examples/mscclang/, arguments)
EXAMPLES = [
    ("allgather_a100_pcie.py", "4 1"),
    ("allgather_a100_pcie.py", "4 2 --protocol Simple"),
    ("allgather_allpairs.py", "8 1"),
    ("allgather_allpairs.py", "4 2 --protocol Simple"),
    ("allgather_recursive_doubling.py", "8 1"),
    ("allgather_ring.py", "8 2 1"),
    ("allgather_ring.py", "4 1 2 --protocol Simple"),
    ("allreduce_1step.py", "8 1"),
    ("allreduce_a100_allpairs.py", "8 1"),
    ("allreduce_a100_allpairs_v2.py", "4 2"),
    ("allreduce_a100_allpairs_v2.py", "8 1"),
    ("allreduce_a100_multinode_allpairs.py", "8 1"),
    ("allreduce_a100_ncv4.py", "4 1"),
    ("allreduce_a100_ncv4_v2.py", "4 1"),
    ("allreduce_a100_pcie_hierarchical.py", "4 1"),
    ("allreduce_a100_recursive_doubling_halving.py", "1 1"),
    ("allreduce_a100_ring.py", "8 2 1"),
    ("allreduce_binomial_tree.py", "8 1 1"),
    ("allreduce_dgx1.py", "2 1"),
    ("allreduce_ndv2.py", "1"),
    ("allreduce_recursive_doubling_halving.py", "8 1"),
    ("alltoall_a100_three_step.py", "2 4 1"),
    ("alltoall_a100_two_step.py", "2 4"),
    ("alltoall_allpairs.py", "8 1"),
    ("alltonext_backward.py", "2 1"),
    ("alltonext_forward.py", "2 1"),
    ("hierarchical_allreduce.py", "4 2 1"),
    ("hierarchical_allreduce.py", "4 2 1 --schedule manual"),
    ("pipeline_a100_allpairs.py", "8 1"),
    ("pipeline_a100_ring.py", "8 2 1"),
    ("reducegather.py", "8 2"),
    ("simple/allgather_ring.py", ""),
    ("simple/allreduce_ring.py", "6 1"),
    ("simple/custom_collective.py", ""),
]


def run(cmd, env=None, timeout=600):
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)


def last_line(text):
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:160] if lines else ""


def first_error(text):
    """The exception line of a traceback (or the last line), without the path prefix."""
    lines = [line for line in text.strip().splitlines() if line.strip()]
    for line in lines:
        if re.match(r"^[\w.]+(Error|Exception)\b", line):
            return line[:160]
    return last_line(text)


def shape(xml):
    """(threadblocks, total steps, most steps in one threadblock) of an MSCCL XML."""
    tbs = 0
    total = 0
    most = 0
    for block in re.findall(r"<tb\b.*?</tb>", xml, flags=re.S):
        tbs += 1
        steps = block.count("<step ")
        total += steps
        most = max(most, steps)
    return tbs, total, most


def is_custom(xml):
    return re.search(r'<algo [^>]*coll="custom"', xml) is not None


def verdict(chorus, xml_path, custom):
    """'ok', what was not checked, or the failure, from `chorus verify`."""
    result = run([chorus, "verify", xml_path])
    out = result.stdout + result.stderr
    if result.returncode != 0:
        return "fails: " + last_line(out).split(": ", 2)[-1][:100]
    if "postcondition not checked" in out:
        return ("deadlock and races ok (custom collective: postcondition not checked)" if custom
                else "ok (postcondition not checked)")
    return "ok"


def run_exactly(chorus, xml_path):
    result = run([chorus, "run", xml_path, "--transport", "thread", "--bytes", "64K",
                  "--timeout", "120"])
    out = result.stdout + result.stderr
    if result.returncode != 0:
        wrong = re.search(r"WRONG: (\d+ of \d+ elements differ)", out)
        return "wrong: " + wrong.group(1) if wrong else "fails: " + last_line(out)[:100]
    if "NOT checked" in out:
        return "ran (custom collective: outputs not checked)"
    return "exact" if "correct (" in out else "ran: " + last_line(out)[:100]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--msccl-tools", required=True, help="microsoft/msccl-tools checkout")
    parser.add_argument("--reference-python", required=True,
                        help="interpreter with msccl-tools' requirements installed")
    parser.add_argument("--chorus-python", default=sys.executable)
    parser.add_argument("--build", default="build", help="chorus build directory")
    parser.add_argument("--out", help="keep the XMLs here (default: a temporary directory)")
    args = parser.parse_args()

    build = os.path.abspath(args.build)
    chorus = os.path.join(build, "chorus")
    examples = os.path.join(os.path.abspath(args.msccl_tools), "examples", "mscclang")
    if not os.path.isdir(examples):
        sys.exit("msccl_parity: %s has no examples/mscclang; pass a microsoft/msccl-tools "
                 "checkout" % args.msccl_tools)
    if not os.access(chorus, os.X_OK):
        sys.exit("msccl_parity: no chorus binary at %s; build first or pass --build" % chorus)
    listed = {program for program, _ in EXAMPLES}
    unlisted = sorted(os.path.relpath(os.path.join(root, name), examples)
                      for root, _, names in os.walk(examples) for name in names
                      if name.endswith(".py") and
                      os.path.relpath(os.path.join(root, name), examples) not in listed)
    missing = sorted(program for program in listed
                     if not os.path.isfile(os.path.join(examples, program)))
    if unlisted or missing:
        sys.exit("msccl_parity: this checkout's examples differ from the list in %s (written for "
                 "msccl-tools 030a750): not listed: %s; missing: %s"
                 % (__file__, ", ".join(unlisted) or "none", ", ".join(missing) or "none"))
    out = args.out or tempfile.mkdtemp(prefix="msccl_parity.")
    os.makedirs(out, exist_ok=True)
    sides = {
        "msccl-tools": (args.reference_python,
                        dict(os.environ, PYTHONPATH=os.path.abspath(args.msccl_tools))),
        "chorus": (args.chorus_python,
                   dict(os.environ, PYTHONPATH=os.pathsep.join(
                       [os.path.join(build, "python"), os.path.join(build, "python", "compat")]))),
    }

    print("| program | args | msccl-tools | chorus | msccl-tools XML: verify | run "
          "| chorus XML: verify | run | threadblocks | steps | most steps in a threadblock |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    counts = {"both": 0, "chorus only": 0, "neither": 0, "reference only": 0,
              "reference only, wrong": 0}
    for number, (program, program_args) in enumerate(EXAMPLES):
        cells = {}
        shapes = {}
        verdicts = {}
        ran = {}
        for side, (python, env) in sides.items():
            cmd = [python, os.path.join(examples, program)] + program_args.split()
            result = run(cmd, env=env)
            # The <algo> element alone: a failed Check() in msccl-tools prints after it.
            match = re.search(r"<algo\b.*</algo>", result.stdout, flags=re.S)
            xml = match.group(0) + "\n" if match else ""
            compiled = result.returncode == 0 and match is not None
            path = os.path.join(out, "%02d.%s.xml" % (number, side))
            with open(path, "w") as f:
                f.write(xml)
            if compiled:
                cells[side] = "compiles"
                shapes[side] = shape(xml)
                verdicts[side] = verdict(chorus, path, is_custom(xml))
            else:
                message = first_error(result.stderr).replace(examples + os.sep, "")
                cells[side] = "refused: " + message.replace("|", "\\|")
                verdicts[side] = "-"
            ran[side] = run_exactly(chorus, path) if compiled else "-"
        ok = {side: cells[side] == "compiles" for side in sides}
        key = ("both" if ok["msccl-tools"] and ok["chorus"] else
               "chorus only" if ok["chorus"] else
               "reference only" if ok["msccl-tools"] else "neither")
        if key == "reference only" and verdicts["msccl-tools"].startswith("fails"):
            key = "reference only, wrong"
        counts[key] += 1

        def pair(index):
            return " / ".join(str(shapes[s][index]) if s in shapes else "-" for s in sides)

        print("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            program, program_args or "(none)", cells["msccl-tools"], cells["chorus"],
            verdicts["msccl-tools"], ran["msccl-tools"], verdicts["chorus"], ran["chorus"],
            pair(0), pair(1), pair(2)))
    print()
    print("Compiled by both: %(both)d; by chorus only: %(chorus only)d; by msccl-tools only: "
          "%(reference only)d, and %(reference only, wrong)d more whose msccl-tools XML fails "
          "`chorus verify`; by neither: %(neither)d. Counts in the last three columns are "
          "msccl-tools / chorus." % counts)
    print("XMLs: %s" % out)
    return 0 if counts["reference only"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
