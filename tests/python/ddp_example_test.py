"""examples/torch/ddp_train.py as the README runs it: torchrun with PYTHONPATH=build/python,
on chorus and on gloo. Both must train and end with the same loss.

Run: PYTHONPATH=build/python /opt/chorus/venv/bin/python -m unittest -v ddp_example_test
"""

import os
import re
import subprocess
import sys
import unittest

REPOSITORY = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
EXAMPLE = os.path.join(REPOSITORY, "examples", "torch", "ddp_train.py")


def torchrun_command():
    """torchrun of the Python running this test (the virtual environment's torch)."""
    return [sys.executable, "-m", "torch.distributed.run"]


def train(backend):
    command = torchrun_command() + [
        "--standalone", "--nproc_per_node", "2", EXAMPLE, "--backend", backend,
        "--epochs", "2", "--steps-per-epoch", "10",
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=240,
                            env=dict(os.environ), cwd=REPOSITORY)
    if result.returncode != 0:
        raise AssertionError(f"{' '.join(command)} exited {result.returncode}:\n"
                             f"{result.stdout}\n{result.stderr}")
    return result.stdout


class DdpExample(unittest.TestCase):
    def test_trains_on_chorus_to_gloo_s_loss(self):
        outputs = {backend: train(backend) for backend in ("chorus", "gloo")}
        losses = {}
        for backend, output in outputs.items():
            self.assertRegex(output, r"epoch 2 loss \d", output)
            self.assertRegex(output, r"mean step time [\d.]+ ms", output)
            match = re.search(r"final loss ([\d.eE+-]+)", output)
            self.assertIsNotNone(match, output)
            losses[backend] = float(match.group(1))
        self.assertAlmostEqual(losses["chorus"], losses["gloo"], places=6)


if __name__ == "__main__":
    unittest.main()
