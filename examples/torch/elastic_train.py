"""Fault-tolerant DistributedDataParallel training under torchrun: checkpoint every step, resume
after a restart, and (for tests) a rank that SIGKILLs itself once.

Run from the repository root::

    PYTHONPATH=build/python torchrun --standalone --nnodes 1 --nproc-per-node 2 \\
        --max-restarts 1 examples/torch/elastic_train.py --backend chorus \\
        --checkpoint-dir /tmp/ckpt --kill-rank 1 --kill-at-step 4

(--standalone is --rdzv-backend c10d --rdzv-endpoint localhost:0 with a fresh run id.)

Every step, rank 0 saves {step, model, optimizer} to CHECKPOINT_DIR/checkpoint.pt through a
temporary file and os.replace, so a checkpoint is either the old one or the new one, whole.
A worker that finds a checkpoint resumes after its step. The batch of step s on rank r is a
function of (--seed, s, r) alone and the model starts from --seed, so an interrupted and resumed
run ends with the same parameters and loss as an undisturbed one.

--kill-rank R --kill-at-step S: rank R kills itself with SIGKILL at the start of step S, on the
first attempt only (TORCHELASTIC_RESTART_COUNT == "0"). Its peers are then inside a collective
with it: they must raise (group timeout --timeout, default 30 s), print the exception and exit 1,
so torchrun restarts the group (--max-restarts 1) and the new attempt resumes.

Each attempt's process group keys live under their own store prefix: torch 2.15's torchrun
keeps one TCPStore for all attempts (unless TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1) and its env://
rendezvous no longer prefixes keys by attempt, so without the prefix a restarted group can read
the previous attempt's addresses (gloo: "connectFullMesh failed ... Connection refused").

torchrun stops the surviving workers with SIGTERM (SIGKILL 30 s later). This script defers that
SIGTERM: a worker blocked in a collective with a dead peer keeps waiting until the backend
reports the failure, so the failure is the backend's to report, not the agent's signal's.

Printed lines (each worker, flushed)::

    rank 0 attempt 0: start at step 0 of 10            (attempt = TORCHELASTIC_RESTART_COUNT)
    rank 0 attempt 1: resumed from step 4              (a checkpoint was found)
    rank 1 attempt 0: SIGKILL at step 4
    rank 0 attempt 0: failed at step 4 after 0.01 s (SIGTERM 0.09 s ago): RuntimeError: ...
    step 9 loss 0.123456                               (rank 0, its own loss)
    final loss 0.123456789012                          (rank 0: last step's loss, mean over ranks)
"""

import argparse
import datetime
import os
import signal
import sys
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

IN_FEATURES = 16
HIDDEN = 32
OUT_FEATURES = 4
CHECKPOINT = "checkpoint.pt"


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backend", choices=["chorus", "gloo"], default="chorus")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=16, help="samples per rank per step")
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--checkpoint-dir", required=True)
    parser.add_argument("--timeout", type=float, default=30.0, help="group timeout, seconds")
    parser.add_argument("--kill-rank", type=int, default=-1)
    parser.add_argument("--kill-at-step", type=int, default=-1)
    return parser.parse_args()


def mlp():
    return nn.Sequential(nn.Linear(IN_FEATURES, HIDDEN), nn.Tanh(),
                         nn.Linear(HIDDEN, OUT_FEATURES))


def batch(seed, step, rank, size):
    """Step `step`'s batch on rank `rank`: the same on every attempt."""
    generator = torch.Generator().manual_seed(seed * 1_000_003 + step * 1009 + rank)
    x = torch.randn(size, IN_FEATURES, generator=generator)
    y = torch.sin(x[:, :OUT_FEATURES]) + 0.5 * x[:, OUT_FEATURES:2 * OUT_FEATURES]
    return x, y


def save_checkpoint(directory, step, model, optimizer):
    """Atomically: write a temporary file beside the checkpoint, then rename it over it."""
    path = os.path.join(directory, CHECKPOINT)
    temporary = f"{path}.tmp.{os.getpid()}"
    torch.save({"step": step, "model": model.state_dict(), "optimizer": optimizer.state_dict()},
               temporary)
    os.replace(temporary, path)


def say(line):
    """One line to stdout in one write: the workers share torchrun's pipe, and print() writes
    the text and the newline separately, so two ranks' lines could interleave."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def main():
    args = parse_args()
    attempt = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
    sigterm_at = []
    signal.signal(signal.SIGTERM, lambda signum, frame: sigterm_at.append(time.time()))
    if args.backend == "chorus":
        import chorus.torch  # noqa: F401  (registers the "chorus" backend)
    timeout = datetime.timedelta(seconds=args.timeout)
    store, rank, world_size = next(dist.rendezvous("env://", timeout=timeout))
    store = dist.PrefixStore(f"elastic_train/attempt_{attempt}", store)
    dist.init_process_group(args.backend, store=store, rank=rank, world_size=world_size,
                            timeout=timeout)
    tag = f"rank {rank} attempt {attempt}"

    torch.manual_seed(args.seed)
    model = mlp()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    os.makedirs(args.checkpoint_dir, exist_ok=True)
    path = os.path.join(args.checkpoint_dir, CHECKPOINT)
    first_step = 0
    if os.path.exists(path):
        state = torch.load(path)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        first_step = state["step"]
        say(f"{tag}: resumed from step {first_step}")
    else:
        say(f"{tag}: start at step 0 of {args.steps}")

    step = first_step
    started = time.time()
    try:
        ddp = DistributedDataParallel(model)  # broadcasts rank 0's (equal) parameters
        loss = torch.zeros(())
        for step in range(first_step, args.steps):
            if attempt == 0 and rank == args.kill_rank and step == args.kill_at_step:
                say(f"{tag}: SIGKILL at step {step}")
                os.kill(os.getpid(), signal.SIGKILL)
            started = time.time()
            x, y = batch(args.seed, step, rank, args.batch_size)
            optimizer.zero_grad(set_to_none=True)
            loss = nn.functional.mse_loss(ddp(x), y)
            loss.backward()  # DDP all-reduces the gradients here
            optimizer.step()
            if rank == 0:
                save_checkpoint(args.checkpoint_dir, step + 1, model, optimizer)
                say(f"step {step} loss {loss.item():.6f}")
        started = time.time()
        mean = loss.detach().reshape(1).double()
        dist.all_reduce(mean)
        if rank == 0:
            say(f"final loss {mean.item() / dist.get_world_size():.12g}")
    except Exception as error:  # a peer died or the group timed out
        now = time.time()
        signalled = f" (SIGTERM {now - sigterm_at[0]:.2f} s ago)" if sigterm_at else ""
        say(f"{tag}: failed at step {step} after {now - started:.2f} s{signalled}: "
              f"{type(error).__name__}: {error}")
        sys.stderr.flush()
        os._exit(1)  # no teardown of a broken group
    dist.destroy_process_group()
    leave_without_teardown_on_gloo(args.backend)


def leave_without_teardown_on_gloo(backend):
    """torch 2.15's gloo now and then aborts the process during interpreter teardown, after the
    group was destroyed ("terminate called without an active exception", exit -6; seen in 2 of
    about 20 runs of these examples on the development VM, never with chorus, which is not
    imported then). Everything is printed and saved by now, so a gloo run exits at once."""
    if backend == "gloo":
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


if __name__ == "__main__":
    main()
