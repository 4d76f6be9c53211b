"""examples/torch/elastic_train.py under torchrun --max-restarts 1, per backend, on 2 and 3 ranks:
an undisturbed run, then a run in which rank 1 SIGKILLs itself at step 4 of the first attempt. The killed run
must exit 0 after exactly one restart that resumed from the checkpoint, its surviving ranks must
have raised (printing the exception) well within the 30 s group timeout, and its final loss must
equal the undisturbed run's (relative 1e-6).

Run (from tests/python):
    PYTHONPATH=../../build/python /opt/chorus/venv/bin/python -m unittest -v elastic_restart_test

CHORUS_TEST_BACKENDS (default "gloo,chorus") picks the backends; the other test is skipped.
torchrun is `python -m torch.distributed.run` of the Python running this test, so the launcher
and the workers use the same torch.
"""

import os
import re
import subprocess
import sys
import tempfile
import time
import unittest

REPOSITORY = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
EXAMPLE = os.path.join(REPOSITORY, "examples", "torch", "elastic_train.py")
STEPS = 10
KILL_RANK = 1
KILL_AT_STEP = 4
GROUP_TIMEOUT_S = 30


def selected(backend):
    chosen = os.environ.get("CHORUS_TEST_BACKENDS", "gloo,chorus").split(",")
    return backend in [b.strip() for b in chosen]


def torchrun(backend, world, checkpoint_dir, *extra):
    command = [
        sys.executable, "-m", "torch.distributed.run", "--standalone", "--nnodes", "1",
        "--nproc-per-node", str(world), "--max-restarts", "1", EXAMPLE, "--backend", backend,
        "--steps", str(STEPS), "--checkpoint-dir", checkpoint_dir,
        "--timeout", str(GROUP_TIMEOUT_S), *extra,
    ]
    started = time.time()
    result = subprocess.run(command, capture_output=True, text=True, timeout=240,
                            env=dict(os.environ), cwd=REPOSITORY)
    log = (f"$ {' '.join(command)}\nexit {result.returncode} after {time.time() - started:.1f} s"
           f"\n--- stdout\n{result.stdout}\n--- stderr\n{result.stderr[-4000:]}")
    return result.returncode, result.stdout, log


def final_loss(testcase, stdout, log):
    losses = re.findall(r"^final loss ([\d.eE+-]+)$", stdout, re.MULTILINE)
    testcase.assertEqual(len(losses), 1, log)
    return float(losses[0])


class ElasticRestart(unittest.TestCase):
    def check(self, backend, world):
        if not selected(backend):
            self.skipTest(f"CHORUS_TEST_BACKENDS leaves out {backend}")
        with tempfile.TemporaryDirectory(prefix="chorus-elastic-") as directory:
            code, plain, plain_log = torchrun(backend, world, os.path.join(directory, "a"))
            self.assertEqual(code, 0, plain_log)
            self.assertNotIn("resumed from step", plain, plain_log)
            self.assertNotIn("attempt 1", plain, plain_log)
            expected = final_loss(self, plain, plain_log)

            code, killed, log = torchrun(backend, world, os.path.join(directory, "b"),
                                         "--kill-rank", str(KILL_RANK),
                                         "--kill-at-step", str(KILL_AT_STEP))
        self.assertEqual(code, 0, log)
        self.assertIn(f"rank {KILL_RANK} attempt 0: SIGKILL at step {KILL_AT_STEP}", killed, log)
        # Exactly one restart, and every worker of it resumed from a checkpoint.
        self.assertNotIn("attempt 2", killed, log)
        for rank in range(world):
            match = re.search(rf"^rank {rank} attempt 1: resumed from step (\d+)$", killed,
                              re.MULTILINE)
            self.assertIsNotNone(match, f"rank {rank} did not resume\n{log}")
            self.assertIn(int(match.group(1)), (KILL_AT_STEP - 1, KILL_AT_STEP), log)
        # The survivors raised (not killed by the agent), within the group timeout.
        for rank in range(world):
            if rank == KILL_RANK:
                continue
            match = re.search(rf"^rank {rank} attempt 0: failed at step \d+ after ([\d.]+) s"
                              rf"(?: \(SIGTERM [\d.]+ s ago\))?: (\w+)", killed, re.MULTILINE)
            self.assertIsNotNone(match, f"survivor rank {rank} printed no exception\n{log}")
            self.assertLess(float(match.group(1)), GROUP_TIMEOUT_S, log)
        got = final_loss(self, killed, log)
        self.assertLessEqual(abs(got - expected), 1e-6 * abs(expected),
                             f"resumed final loss {got!r} != undisturbed {expected!r}\n{log}")

    def test_gloo(self):
        self.check("gloo", 2)

    def test_chorus(self):
        self.check("chorus", 2)

    def test_gloo_on_three_ranks(self):
        self.check("gloo", 3)

    def test_chorus_on_three_ranks(self):
        self.check("chorus", 3)


if __name__ == "__main__":
    unittest.main()
