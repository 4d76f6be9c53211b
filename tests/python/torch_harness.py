"""Runs a function on N spawned ranks of a torch.distributed job (tests of the chorus backend).

Each rank is a fresh process (multiprocessing "spawn"), joins the group through a file:// store
in a temporary directory, runs the function and reports its return value or its traceback.
A rank that does not finish within the timeout is killed and fails the test.
"""

import multiprocessing
import os
import tempfile
import traceback

DEFAULT_TIMEOUT_S = 240


def _rank_main(fn, rank, world, init_file, backend, env, args, results):
    os.environ.update(env)
    try:
        import torch.distributed as dist

        if backend == "chorus":
            import chorus.torch  # noqa: F401  (registers the backend)
        dist.init_process_group(
            backend, init_method=f"file://{init_file}", rank=rank, world_size=world
        )
        value = fn(rank, world, *args)
        results.put((rank, "ok", value))
    except BaseException:  # report everything, SystemExit included
        results.put((rank, "error", traceback.format_exc()))


def run_ranks(world, fn, *args, backend="chorus", env=None, timeout=DEFAULT_TIMEOUT_S,
              expect_exit=()):
    """Runs fn(rank, world, *args) on `world` ranks; returns {rank: return value}.

    Raises AssertionError with every failing rank's traceback. Ranks in `expect_exit` may end
    without reporting (a test that kills one).
    """
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    with tempfile.TemporaryDirectory(prefix="chorus-torch-test-") as directory:
        init_file = os.path.join(directory, "store")
        processes = [
            context.Process(
                target=_rank_main,
                args=(fn, rank, world, init_file, backend, dict(env or {}), args, results),
            )
            for rank in range(world)
        ]
        for process in processes:
            process.start()
        reports = {}
        expected = world - len(expect_exit)
        try:
            while len(reports) < expected:
                rank, status, value = results.get(timeout=timeout)
                reports[rank] = (status, value)
        except Exception:
            pass
        for process in processes:
            process.join(timeout=10)
            if process.is_alive():
                process.kill()
                process.join()
    missing = [r for r in range(world) if r not in reports and r not in expect_exit]
    failures = [f"rank {r}:\n{v}" for r, (s, v) in sorted(reports.items()) if s == "error"]
    if missing:
        failures.append(f"ranks {missing} reported nothing within {timeout} s (hung or crashed)")
    if failures:
        raise AssertionError("\n".join(failures))
    return {r: v for r, (s, v) in reports.items()}
