"""Real PyTorch 2.x clients of torch.distributed on spawned ranks, each run on chorus and on gloo
in the same test (2 and 3 ranks): FSDP2 training, DTensor redistribution, tagged point-to-point,
an isend that must progress while its sender blocks elsewhere, per-call and per-group timeouts,
and a peer that leaves the group.

Run (from tests/python):
    PYTHONPATH=../../build/python:. /opt/chorus/venv/bin/python -m unittest -v torch_clients_test
One class is one CTest test (each well under a minute on 2 cores).

CHORUS_TEST_BACKENDS (default "gloo,chorus") picks the backends; "gloo" alone runs every check
that does not need chorus (the reference values are computed by the test, not taken from gloo),
which is how this file is exercised where chorus does not build.

Rank functions return plain Python values (lists, dicts): a tensor put on the harness's queue is
shared through a file descriptor of a process that then exits, and the parent never gets it.
"""

import datetime
import os
import re
import time
import unittest

import torch

from torch_harness import run_ranks

RUN_TIMEOUT_S = 90  # per run_ranks report; a hung rank fails the test at this bound
TIMEOUT_MESSAGE = re.compile(r"time[ds]?[ _-]?out", re.IGNORECASE)


def backends():
    """The backends under test, gloo (the reference) first."""
    chosen = [b.strip() for b in os.environ.get("CHORUS_TEST_BACKENDS", "gloo,chorus").split(",")
              if b.strip()]
    return sorted(chosen, key=lambda b: b != "gloo")


def one_thread():
    """Ranks share 2 cores: one intra-op thread each keeps 3 ranks from thrashing."""
    torch.set_num_threads(1)


def seconds(value):
    return datetime.timedelta(seconds=value)


# ---- FSDP ----------------------------------------------------------------------------------

IN, HIDDEN, OUT, BATCH, LR = 8, 16, 4, 6, 0.1


def mlp():
    torch.manual_seed(2024)
    return torch.nn.Sequential(torch.nn.Linear(IN, HIDDEN), torch.nn.Tanh(),
                               torch.nn.Linear(HIDDEN, OUT))


def fsdp_batch(step, rank):
    """Rank `rank`'s batch of step `step`: a function of the two alone."""
    generator = torch.Generator().manual_seed(1000 * step + rank)
    x = torch.randn(BATCH, IN, generator=generator)
    y = x[:, :OUT].sin() + 0.1 * x[:, OUT:].sum(dim=1, keepdim=True)
    return x, y


def train_fsdp2(rank, world, steps):
    """FSDP2 (torch.distributed.fsdp.fully_shard): each Linear, then the root, on a 1-D CPU mesh.

    Returns {"api", "placements", "params": [flattened full parameters as lists]}.
    """
    one_thread()
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    model = mlp()  # the same initial values on every rank (fully_shard keeps each rank's shard)
    mesh = init_device_mesh("cpu", (world,))
    for layer in model:
        if isinstance(layer, torch.nn.Linear):
            fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    for step in range(steps):
        x, y = fsdp_batch(step, rank)
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()  # reduce-scatter averages grads
        optimizer.step()
    full = [p.full_tensor() for p in model.parameters()]  # all-gathers every shard
    return {
        "api": "torch.distributed.fsdp.fully_shard",
        "placements": [str(p.placements) for p in model.parameters()],
        "params": [t.reshape(-1).tolist() for t in full],
    }


def train_locally(world, steps):
    """The same training without any process group: the loss is the mean of the ranks' losses,
    so its gradient is the ranks' averaged gradient."""
    model = mlp()
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    for step in range(steps):
        optimizer.zero_grad()
        losses = []
        for rank in range(world):
            x, y = fsdp_batch(step, rank)
            losses.append(torch.nn.functional.mse_loss(model(x), y))
        (sum(losses) / world).backward()
        optimizer.step()
    return [p.detach().reshape(-1) for p in model.parameters()]


class FullyShardedOnTwoAndThreeRanks(unittest.TestCase):
    """FSDP2 (`fully_shard`, DTensor parameters) on CPU: it runs on gloo in torch 2.15, so the
    legacy FullyShardedDataParallel wrapper is not used. 5 SGD steps on a small MLP with fixed
    seeds and per-(step, rank) data; on 3 ranks the 4-row layer leaves one rank an empty shard.
    Every backend's gathered parameters must match training without a group (rtol 1e-5,
    atol 1e-6), chorus's must match gloo's likewise, and every rank's must be identical."""

    STEPS = 5

    def check(self, world):
        reference = train_locally(world, self.STEPS)
        gathered = {}
        for backend in backends():
            results = run_ranks(world, train_fsdp2, self.STEPS, backend=backend,
                                timeout=RUN_TIMEOUT_S)
            for rank in range(1, world):
                self.assertEqual(results[rank]["params"], results[0]["params"],
                                 f"{backend}: rank {rank}'s parameters differ from rank 0's")
            self.assertTrue(all("Shard(dim=0)" in p for p in results[0]["placements"]),
                            results[0]["placements"])
            params = [torch.tensor(p, dtype=torch.float32) for p in results[0]["params"]]
            for i, (got, want) in enumerate(zip(params, reference)):
                self.assertTrue(torch.allclose(got, want, rtol=1e-5, atol=1e-6),
                                f"{backend} on {world} ranks, parameter {i}: max difference "
                                f"{float((got - want).abs().max())} from local training")
            gathered[backend] = params
        if "chorus" in gathered and "gloo" in gathered:
            for i, (a, b) in enumerate(zip(gathered["chorus"], gathered["gloo"])):
                self.assertTrue(torch.allclose(a, b, rtol=1e-5, atol=1e-6),
                                f"parameter {i}: chorus and gloo differ by up to "
                                f"{float((a - b).abs().max())} on {world} ranks")

    def test_two_ranks(self):
        self.check(2)

    def test_three_ranks(self):
        self.check(3)


# ---- DTensor -------------------------------------------------------------------------------


def expect_equal(actual, expected, what):
    if actual.shape != expected.shape or not torch.equal(actual, expected):
        raise AssertionError(f"{what}: got {tuple(actual.shape)} {actual.tolist()}, "
                             f"expected {tuple(expected.shape)} {expected.tolist()}")


def chunk_of(full, world, rank, dim):
    """Rank `rank`'s Shard(dim) piece: torch.chunk's split, empty past the last chunk."""
    pieces = torch.chunk(full, world, dim=dim)
    if rank < len(pieces):
        return pieces[rank]
    return full.narrow(dim, 0, 0)


def redistribute_dtensors(rank, world):
    """Shard(0) -> Replicate -> Shard(1) -> Shard(0), Partial(sum|max) -> Replicate/Shard(0),
    and a sharded matmul, each checked against the full tensor computed here."""
    one_thread()
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import DTensor, Replicate, Shard, distribute_tensor

    try:
        from torch.distributed.tensor import Partial
    except ImportError:  # older spelling
        from torch.distributed.tensor.placement_types import Partial

    mesh = init_device_mesh("cpu", (world,))
    full = torch.arange(7 * 5, dtype=torch.float32).reshape(7, 5)  # 7 rows: uneven shards
    checked = []

    d = distribute_tensor(full, mesh, [Shard(0)])
    expect_equal(d.to_local(), chunk_of(full, world, rank, 0), "distribute_tensor Shard(0)")
    r = d.redistribute(mesh, [Replicate()])
    expect_equal(r.to_local(), full, "Shard(0) -> Replicate")
    s1 = r.redistribute(mesh, [Shard(1)])
    expect_equal(s1.to_local(), chunk_of(full, world, rank, 1), "Replicate -> Shard(1)")
    s0 = s1.redistribute(mesh, [Shard(0)])
    expect_equal(s0.to_local(), chunk_of(full, world, rank, 0), "Shard(1) -> Shard(0)")
    expect_equal(s0.full_tensor(), full, "full_tensor of Shard(0)")
    checked += ["Shard(0)", "->Replicate", "->Shard(1)", "->Shard(0)", "full_tensor"]

    factor = float(sum(q + 1 for q in range(world)))
    p = DTensor.from_local(full * (rank + 1), mesh, [Partial()], run_check=False)
    expect_equal(p.redistribute(mesh, [Replicate()]).to_local(), full * factor,
                 "Partial(sum) -> Replicate")
    p = DTensor.from_local(full * (rank + 1), mesh, [Partial()], run_check=False)
    expect_equal(p.redistribute(mesh, [Shard(0)]).to_local(),
                 chunk_of(full * factor, world, rank, 0), "Partial(sum) -> Shard(0)")
    m = DTensor.from_local(full + rank, mesh, [Partial("max")], run_check=False)
    expect_equal(m.redistribute(mesh, [Replicate()]).to_local(), full + (world - 1),
                 "Partial(max) -> Replicate")
    checked += ["Partial(sum)->Replicate", "Partial(sum)->Shard(0)", "Partial(max)->Replicate"]

    # Sharded contraction dimension: the product is Partial until full_tensor() reduces it.
    a = torch.arange(4 * 6, dtype=torch.float32).reshape(4, 6) % 5 - 2
    b = torch.arange(6 * 3, dtype=torch.float32).reshape(6, 3) % 7 - 3
    c = distribute_tensor(a, mesh, [Shard(1)]) @ distribute_tensor(b, mesh, [Shard(0)])
    expect_equal(c.full_tensor(), a @ b, "Shard(1) @ Shard(0)")
    checked.append("matmul")
    return checked


DTENSOR_CHECKS = ["Shard(0)", "->Replicate", "->Shard(1)", "->Shard(0)", "full_tensor",
                  "Partial(sum)->Replicate", "Partial(sum)->Shard(0)", "Partial(max)->Replicate",
                  "matmul"]


class DTensorRedistribute(unittest.TestCase):
    """torch.distributed.tensor on a 1-D CPU DeviceMesh: distribute_tensor (scatter), Shard ->
    Replicate (all-gather of uneven shards), Shard(1) -> Shard(0) (on CPU torch 2.15 falls back
    from all-to-all to all-gather + chunk), Partial(sum/max) -> Replicate (all-reduce) and
    -> Shard(0) (reduce-scatter), and a matmul over a sharded contraction dimension."""

    def check(self, world):
        for backend in backends():
            results = run_ranks(world, redistribute_dtensors, backend=backend,
                                timeout=RUN_TIMEOUT_S)
            for rank in range(world):
                self.assertEqual(results[rank], DTENSOR_CHECKS, f"{backend} rank {rank}")

    def test_two_ranks(self):
        self.check(2)

    def test_three_ranks(self):
        self.check(3)


# ---- tagged point-to-point -----------------------------------------------------------------


def tagged_payload(src, tag, n):
    return torch.arange(n, dtype=torch.float32) + 1000.0 * src + 10.0 * tag


def tagged_pairs(rank, world):
    """Rank 0 isends tag 7 then tag 3 to rank 1, which receives tag 3 first.

    Round 1: sizes differ (5 and 11 elements), both irecvs posted (3, then 7) before waiting.
    Round 2: same sizes (a mix-up would pass unnoticed by size), rank 1 completes a blocking recv
    of tag 3 before posting tag 7 while rank 0 waits on its tag-7 isend first.
    """
    one_thread()
    import torch.distributed as dist

    sizes = {7: 5, 3: 11}
    if rank == 0:
        works = [dist.isend(tagged_payload(0, tag, sizes[tag]), 1, tag=tag) for tag in (7, 3)]
        for work in works:
            work.wait()
        works = [dist.isend(tagged_payload(0, tag, 8) * -1, 1, tag=tag) for tag in (7, 3)]
        for work in works:  # tag 7 first: it completes only after rank 1 got tag 3
            work.wait()
        return "sent"
    if rank == 1:
        into = {tag: torch.zeros(sizes[tag]) for tag in (3, 7)}
        works = {tag: dist.irecv(into[tag], 0, tag=tag) for tag in (3, 7)}
        for tag in (3, 7):
            works[tag].wait()
            expect_equal(into[tag], tagged_payload(0, tag, sizes[tag]),
                         f"round 1: irecv of tag {tag}")
        into = {tag: torch.zeros(8) for tag in (3, 7)}
        dist.recv(into[3], 0, tag=3)
        dist.recv(into[7], 0, tag=7)
        for tag in (3, 7):
            expect_equal(into[tag], tagged_payload(0, tag, 8) * -1, f"round 2: recv of tag {tag}")
        return "received"
    return "idle"


def tagged_ring(rank, world):
    """Every rank isends tag 7 then tag 3 to the next rank and receives from the previous one
    with the receives posted tag 3 first; then the same with batch_isend_irecv (P2POp tags)."""
    one_thread()
    import torch.distributed as dist

    nxt, prev = (rank + 1) % world, (rank - 1) % world
    sizes = {7: 6, 3: 9}
    into = {tag: torch.zeros(sizes[tag]) for tag in (3, 7)}
    sends = [dist.isend(tagged_payload(rank, tag, sizes[tag]), nxt, tag=tag) for tag in (7, 3)]
    recvs = {tag: dist.irecv(into[tag], prev, tag=tag) for tag in (3, 7)}
    for tag in (3, 7):
        recvs[tag].wait()
        expect_equal(into[tag], tagged_payload(prev, tag, sizes[tag]), f"ring irecv tag {tag}")
    for work in sends:
        work.wait()

    into = {tag: torch.zeros(8) for tag in (3, 7)}
    ops = [dist.P2POp(dist.irecv, into[3], prev, tag=3),
           dist.P2POp(dist.isend, tagged_payload(rank, 7, 8) + 0.5, nxt, tag=7),
           dist.P2POp(dist.irecv, into[7], prev, tag=7),
           dist.P2POp(dist.isend, tagged_payload(rank, 3, 8) + 0.5, nxt, tag=3)]
    for work in dist.batch_isend_irecv(ops):
        work.wait()
    for tag in (3, 7):
        expect_equal(into[tag], tagged_payload(prev, tag, 8) + 0.5, f"batch_isend_irecv tag {tag}")
    return "ok"


class TaggedPointToPoint(unittest.TestCase):
    """Tags select the message: a receive gets the tensor sent with its tag even when the sends
    were posted in the other order. gloo matches by tag (checked), so both backends must."""

    def test_two_ranks_receive_in_the_opposite_tag_order(self):
        for backend in backends():
            results = run_ranks(2, tagged_pairs, backend=backend, timeout=RUN_TIMEOUT_S)
            self.assertEqual(results, {0: "sent", 1: "received"}, backend)

    def test_three_rank_ring_with_interleaved_tags(self):
        for backend in backends():
            results = run_ranks(3, tagged_ring, backend=backend, timeout=RUN_TIMEOUT_S)
            self.assertEqual(results, {r: "ok" for r in range(3)}, backend)


# ---- isend progress ------------------------------------------------------------------------

MIB_OF_FLOATS = (1 << 20) // 4
BLOCK_S = 20


def isend_then_block(rank, world):
    """2 ranks: rank 0 isends 1 MiB to rank 1, then blocks on the store until rank 1 says its
    recv completed; only then does it wait on the isend. 3 ranks: a ring, every rank isends to
    the next, recvs from the previous, announces it, and waits for the next rank's announcement
    before waiting on its own isend. Returns the seconds spent blocked on the store."""
    one_thread()
    import torch.distributed as dist

    group = dist.new_group(list(range(world)), timeout=seconds(BLOCK_S))
    store = dist.distributed_c10d._get_default_store()
    payload = torch.arange(MIB_OF_FLOATS, dtype=torch.float32) + rank
    nxt, prev = (rank + 1) % world, (rank - 1) % world
    senders = range(world) if world > 2 else (0,)
    work = None
    if rank in senders:
        work = dist.isend(payload, nxt, group=group)
    if prev in senders:
        into = torch.empty(MIB_OF_FLOATS)
        dist.recv(into, prev, group=group)
        expect_equal(into, torch.arange(MIB_OF_FLOATS, dtype=torch.float32) + prev,
                     f"rank {rank}'s recv from {prev}")
        store.set(f"received-by-{rank}", "1")
    blocked = None
    if work is not None:
        start = time.time()
        try:
            store.wait([f"received-by-{nxt}"], seconds(BLOCK_S))
            blocked = time.time() - start
        except Exception as error:  # the isend made no progress: report, then unblock the peer
            blocked = f"store wait failed after {time.time() - start:.1f} s: {error}"
        work.wait()
    return blocked


class IsendCompletesWhileTheSenderBlocksElsewhere(unittest.TestCase):
    """An isend progresses without its sender calling wait(): the sender sits in a store wait
    that returns only once the receiver's recv completed. Group timeout 20 s, so a send that
    starts only at wait() fails within ~20 s instead of hanging."""

    def check(self, world):
        for backend in backends():
            results = run_ranks(world, isend_then_block, backend=backend, timeout=RUN_TIMEOUT_S)
            for rank, blocked in results.items():
                if blocked is None:
                    continue
                self.assertIsInstance(blocked, float, f"{backend} rank {rank}: {blocked}")
                self.assertLess(blocked, 10.0, f"{backend} rank {rank} blocked {blocked} s")

    def test_two_ranks(self):
        self.check(2)

    def test_three_rank_ring(self):
        self.check(3)


# ---- timeouts ------------------------------------------------------------------------------


def failure(call):
    """Runs call(); returns (seconds, None) or (seconds, 'Type: message') if it raised."""
    start = time.time()
    try:
        call()
    except Exception as error:
        return time.time() - start, f"{type(error).__name__}: {error}"
    return time.time() - start, None


def time_out_calls(rank, world, per_call):
    """Part 1 (per_call, 2 ranks): rank 0's irecv from rank 1 waited with timeout=1 s while rank
    1 sleeps 5 s before sending. Part 2: on a group created with timeout=2 s, every rank but the
    last calls all_reduce; the last never joins and waits on the store until they have returned.

    Both groups exist before either part runs (gloo closes a group's connections after a
    timeout, so each part has its own group)."""
    one_thread()
    import torch.distributed as dist

    p2p = dist.new_group(list(range(world)), timeout=seconds(20))
    short = dist.new_group(list(range(world)), timeout=seconds(2))
    store = dist.distributed_c10d._get_default_store()
    report = {}
    if per_call and rank == 0:
        work = dist.irecv(torch.zeros(4), src=1, group=p2p)
        report["per_call"] = failure(lambda: work.wait(timeout=seconds(1)))
    elif per_call and rank == 1:
        time.sleep(5)
        # What happens to this late send is the backend's business (gloo: the connection was
        # closed by rank 0's timeout); it is reported, not checked.
        report["late_send"] = failure(lambda: dist.isend(torch.ones(4), 0, group=p2p).wait(
            timeout=seconds(5)))
    if rank < world - 1:
        report["group"] = failure(lambda: dist.all_reduce(torch.ones(4), group=short))
        store.set(f"returned-{rank}", "1")
    else:
        store.wait([f"returned-{r}" for r in range(world - 1)], seconds(60))
    return report


class PerCallTimeout(unittest.TestCase):
    """work.wait(timeout=1 s) on an irecv whose message comes 5 s later raises within 3 s; a
    collective on a group made with timeout=2 s that a peer never joins raises within 10 s
    saying it timed out (the harness's world group keeps the default 30 min). gloo does both
    (1.0 s, "Timed out waiting 1000ms for recv operation to complete"; 2.0 s, likewise)."""

    def check_raised(self, backend, what, measured, upper):
        elapsed, error = measured
        self.assertIsNotNone(error, f"{backend}: {what} returned after {elapsed:.1f} s")
        self.assertLess(elapsed, upper, f"{backend}: {what} raised after {elapsed:.1f} s: {error}")
        self.assertRegex(error, TIMEOUT_MESSAGE, f"{backend}: {what}")

    def test_wait_timeout_and_group_timeout_on_two_ranks(self):
        for backend in backends():
            results = run_ranks(2, time_out_calls, True, backend=backend, timeout=RUN_TIMEOUT_S)
            with self.subTest(backend=backend, part="wait(timeout=1 s)"):
                self.check_raised(backend, "irecv wait(timeout=1 s)", results[0]["per_call"], 3.0)
                self.assertGreater(results[0]["per_call"][0], 0.9, results[0]["per_call"])
            with self.subTest(backend=backend, part="group timeout 2 s"):
                self.check_raised(backend, "all_reduce without its peer", results[0]["group"],
                                  10.0)

    def test_group_timeout_on_three_ranks(self):
        for backend in backends():
            results = run_ranks(3, time_out_calls, False, backend=backend,
                                timeout=RUN_TIMEOUT_S)
            for rank in (0, 1):
                self.check_raised(backend, f"rank {rank}'s all_reduce without rank 2",
                                  results[rank]["group"], 10.0)


# ---- a departed peer -----------------------------------------------------------------------

GROUP_TIMEOUT_S = 60


def leave_while_others_reduce(rank, world, leaver, linger, keep_reference=False):
    """Rank `leaver` calls destroy_process_group() after one all_reduce with the others, who
    call all_reduce again (group timeout 60 s). Without `linger` the leaver then returns and its
    process exits. With `linger` it drops its last reference to the group (unless
    `keep_reference`) and stays alive until the others returned, so only the group's shutdown
    and destruction, not the process's exit, can tell them."""
    one_thread()
    import gc

    import torch.distributed as dist

    group = dist.new_group(list(range(world)), timeout=seconds(GROUP_TIMEOUT_S))
    store = dist.distributed_c10d._get_default_store()
    t = torch.ones(1024)
    dist.all_reduce(t, group=group)
    if rank == leaver:
        dist.destroy_process_group()
        if linger:
            if not keep_reference:
                del group
                gc.collect()
            store.wait([f"returned-{r}" for r in range(world) if r != leaver],
                       seconds(GROUP_TIMEOUT_S + 15))
        return "left"
    measured = failure(lambda: dist.all_reduce(t, group=group))
    store.set(f"returned-{rank}", "1")
    return measured


class DepartedPeerIsReportedAtOnce(unittest.TestCase):
    """A rank that destroys its process group while the others are in all_reduce makes them
    raise within 10 s, not at the group's 60 s timeout. gloo does (its peers see "Connection
    closed by peer" within milliseconds) once the leaver's process exits or its last reference
    to the group is dropped, so both backends are held to that. gloo's destroy_process_group()
    alone (ProcessGroupGloo.shutdown(), the group object still referenced) does not tell the
    peers: they wait out the 60 s timeout, so that variant runs on chorus only."""

    def check(self, world, linger, keep_reference=False, only=None):
        leaver = 1
        ran = False
        for backend in backends():
            if only and backend not in only:
                continue
            ran = True
            results = run_ranks(world, leave_while_others_reduce, leaver, linger, keep_reference,
                                backend=backend, timeout=GROUP_TIMEOUT_S + 30)
            self.assertEqual(results[leaver], "left")
            for rank in range(world):
                if rank == leaver:
                    continue
                elapsed, error = results[rank]
                self.assertIsNotNone(error, f"{backend} rank {rank}: all_reduce succeeded "
                                            f"without rank {leaver}")
                self.assertLess(elapsed, 10.0, f"{backend} rank {rank}: raised after "
                                               f"{elapsed:.1f} s: {error}")
        if not ran:
            self.skipTest(f"runs on {only} only; CHORUS_TEST_BACKENDS has none of them")

    def test_two_ranks_the_leaver_exits(self):
        self.check(2, linger=False)

    def test_three_ranks_the_leaver_drops_the_group_and_stays_alive(self):
        self.check(3, linger=True)

    def test_three_ranks_destroy_process_group_alone_tells_the_peers(self):
        self.check(3, linger=True, keep_reference=True, only=("chorus",))


if __name__ == "__main__":
    unittest.main()
