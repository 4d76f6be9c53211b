"""The mscclpp compatibility package (python/compat/mscclpp): MSCCL++'s DSL on chorus.

Every program in mscclpp_programs/ runs as MSCCL++ DSL programs do (a subprocess printing the
JSON execution plan); its plan must have the expected shape, parse with chorus.parse, pass
chorus's verifier and compute its collective on thread ranks with every output element
checked (the LL one too: chorus runs packets on thread ranks). The programs in
mscclpp_programs/bad/ must fail with the type MSCCL++ raises and a message naming the line
marked ``# expect-error: TYPE: PHRASE``. The remaining tests pin MSCCL++'s post-processing
(fusion, nops, replication) on small programs, with facts measured against MSCCL++ 1f5f065.
Run with PYTHONPATH=<build>/python:<build>/python/compat.
"""

import concurrent.futures
import json
import os
import random
import re
import subprocess
import sys
import unittest

import chorus
from mscclpp.language.channel import MemoryChannel, PortChannel, SwitchChannel
from mscclpp.language.collectives import AllGather, AllReduce, TestCollective
from mscclpp.language.general import JSON
from mscclpp.language.internal import emit
from mscclpp.language.loop import LoopIterationContext
from mscclpp.language.program import CollectiveProgram, MscclppProgramError
from mscclpp.language.rank import Buffer, BufferType, Rank, Semaphore, SyncType

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAMS = os.path.join(HERE, "mscclpp_programs")
PYTHON = sys.executable

# (test name, program, arguments, collective, ranks, op names the plan must contain)
CASES = [
    # rre and the put of its result fuse into rres.
    ("allreduce_read_reduce_put", "allreduce_read_reduce_put.py", [], "allreduce", 4,
     {"rres", "rlxsignal", "rlxwait", "signal", "wait", "nop"}),
    ("allreduce_read_reduce_put_2_instances", "allreduce_read_reduce_put.py",
     ["--num_gpus", "3", "--instances", "2"], "allreduce", 3, {"rres"}),
    ("allgather_put", "allgather_put.py", [], "allgather", 4, {"copy", "put", "signal", "wait"}),
    ("reducescatter_scratch", "reducescatter_scratch.py", [], "reducescatter", 4,
     {"put", "re", "signal", "wait"}),
    ("alltoall_put", "alltoall_put.py", [], "alltoall", 4, {"copy", "put", "signal", "wait"}),
    ("allgather_tbg", "allgather_tbg.py", [], "allgather", 4, {"put", "barrier", "signal"}),
    ("allgather_semaphore", "allgather_semaphore.py", [], "allgather", 4,
     {"put", "sem_release", "sem_acquire", "copy"}),
    ("allgather_port", "allgather_port.py", [], "allgather", 3, {"pwsf", "wait", "copy"}),
]

LL_CASES = [
    ("allgather_packets", "allgather_packets.py", []),
    ("allgather_packets_2_instances", "allgather_packets.py", ["--instances", "2"]),
]

BAD_PROGRAMS = sorted(f for f in os.listdir(os.path.join(PROGRAMS, "bad")) if f.endswith(".py"))


def run_program(path, args=()):
    return subprocess.run([PYTHON, path] + list(args), capture_output=True, text=True,
                          timeout=120, env=dict(os.environ))


def run_all(jobs):
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        futures = {name: pool.submit(run_program, path, args) for name, path, args in jobs}
        return {name: future.result() for name, future in futures.items()}


def op_names(plan):
    names = set()

    def walk(ops):
        for op in ops:
            names.add(op["name"])
            walk(op.get("ops", []))
    for gpu in plan["gpus"]:
        for tb in gpu["threadblocks"]:
            walk(tb["ops"])
    return names


def tb_ops(text, rank=0, tb=0):
    """Op names of one threadblock; a pipeline as ("pipeline", [body names])."""
    def name(op):
        return ("pipeline", [name(o) for o in op["ops"]]) if op["name"] == "pipeline" \
            else op["name"]
    return [name(op) for op in json.loads(text)["gpus"][rank]["threadblocks"][tb]["ops"]]


class ProgramsEmitVerifyAndRun(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.results = run_all([(name, os.path.join(PROGRAMS, program), args)
                               for name, program, args, *_ in CASES + LL_CASES])

    def plan_json(self, name):
        result = self.results[name]
        self.assertEqual(result.returncode, 0, "%s failed:\n%s" % (name, result.stderr))
        return result.stdout, json.loads(result.stdout)

    def check_program(self, name, collective, ranks, names, protocol="Simple"):
        text, plan = self.plan_json(name)
        self.assertEqual(plan["collective"], collective)
        self.assertEqual(plan["protocol"], protocol)
        self.assertEqual([g["id"] for g in plan["gpus"]], list(range(ranks)))
        self.assertLessEqual(names, op_names(plan))
        self.assertEqual(list(plan)[-1], "max_message_size")
        self.assertEqual(plan["max_message_size"], 2**64 - 1)
        plans = chorus.parse(text, name + ".json")
        self.assertEqual(len(plans), 1)
        report = plans[0].verify()
        self.assertTrue(report.ok, "%s: %s" % (name, report))
        run = chorus.run(plans[0], bytes="4K", timeout=60)
        self.assertTrue(run.ok and run.postcondition_known, "%s: %r" % (name, run))
        self.assertGreater(run.checked, 0)
        sim = chorus.simulate(plans[0], topology="dgx-h100", bytes="1M")
        self.assertGreater(sim.seconds, 0, name)
        self.assertTrue(sim.links, name)  # its puts crossed NVLink

    def test_instances_replicate_threadblocks_and_channels(self):
        _, one = self.plan_json("allreduce_read_reduce_put")
        _, two = self.plan_json("allreduce_read_reduce_put_2_instances")
        gpu = two["gpus"][0]
        self.assertEqual(len(gpu["threadblocks"]), 2 * 2)  # 2 tbs, 2 instances
        self.assertEqual([tb["id"] for tb in gpu["threadblocks"]], [0, 1, 2, 3])
        self.assertEqual(gpu["input_chunks"], 2 * 3 * 2)
        memory = [c for c in gpu["channels"] if c["channel_type"] == "memory"][0]
        self.assertEqual(memory["connected_to"][:4], [1, 1, 2, 2])  # each repeated in place
        # Chunk x of copy i of n is x * n + i * size: tb 1 (copy 1 of tb 0) reads chunk 1.
        rres = [op for op in gpu["threadblocks"][1]["ops"] if op["name"] == "rres"][0]
        self.assertEqual(rres["src_buff"][0]["index"], 1)
        self.assertEqual([d["index"] for d in rres["dst_buff"]], [1, 1, 1])
        self.assertEqual(len(one["gpus"][0]["threadblocks"]), 2)

    def test_puts_to_one_peer_fuse(self):
        _, plan = self.plan_json("alltoall_put")
        puts = [op for tb in plan["gpus"][0]["threadblocks"] for op in tb["ops"]
                if op["name"] == "put"]
        # Puts of one size fuse whatever their peer: one put of 3 peers x 2 chunks.
        self.assertEqual(len(puts), 1)
        self.assertEqual([(d["buffer_id"], d["index"]) for d in puts[0]["dst_buff"]],
                         [(0, 0), (0, 1), (1, 0), (1, 1), (2, 0), (2, 1)])
        self.assertEqual([s["index"] for s in puts[0]["src_buff"]], [2, 3, 4, 5, 6, 7])
        self.assertNotIn("channel_ids", puts[0])  # memory puts carry none

    def test_tbg_info_and_barrier(self):
        _, plan = self.plan_json("allgather_tbg")
        tbs = plan["gpus"][0]["threadblocks"]
        put = [op for op in tbs[1]["ops"] if op["name"] == "put"][0]
        self.assertEqual(put["tbg_info"], {"tb_id": 1, "tbg_size": 2})
        barrier = [op for op in tbs[0]["ops"] if op["name"] == "barrier"][0]
        self.assertEqual(barrier["num_threadblocks"], 2)

    def test_semaphores_listed_per_gpu(self):
        _, plan = self.plan_json("allgather_semaphore")
        self.assertEqual(plan["gpus"][2]["semaphores"], [{"init_value": 0}])
        # The release's `both` shares the wait's trailing nop; the acquire gets its own.
        self.assertEqual([op["name"] for op in plan["gpus"][2]["threadblocks"][0]["ops"]][-3:],
                         ["nop", "sem_release", "nop"])
        self.assertEqual([op["name"] for op in plan["gpus"][2]["threadblocks"][1]["ops"]],
                         ["copy", "nop", "sem_acquire", "nop", "copy", "copy", "copy"])

    def test_port_channel_puts_carry_channel_ids(self):
        _, plan = self.plan_json("allgather_port")
        gpu = plan["gpus"][0]
        self.assertEqual(gpu["channels"], [{"channel_type": "port", "connected_to": [1, 2]}])
        pwsf = [op for op in gpu["threadblocks"][0]["ops"] if op["name"] == "pwsf"][0]
        self.assertEqual(pwsf["channel_ids"], [0, 1])  # two fused puts, one per peer
        self.assertEqual(gpu["remote_buffers"],
                         [{"rank": 1, "type": "o", "access_channel_types": ["port"]},
                          {"rank": 2, "type": "o", "access_channel_types": ["port"]}])

    def test_ll_program_emits_packet_ops(self):
        _, plan = self.plan_json("allgather_packets")
        self.assertEqual(plan["protocol"], "LL")
        ops = plan["gpus"][1]["threadblocks"][0]["ops"]
        self.assertEqual([op["name"] for op in ops], ["ppkt"])  # 3 puts of one source fused
        self.assertEqual([d["index"] for d in ops[0]["dst_buff"]], [1, 1, 1])
        self.assertEqual([op["name"] for op in plan["gpus"][1]["threadblocks"][1]["ops"]],
                         ["copy", "upkt", "upkt", "upkt"])
        self.assertEqual(plan["gpus"][1]["scratch_chunks"], 4)
        _, two = self.plan_json("allgather_packets_2_instances")
        self.assertEqual(two["gpus"][1]["scratch_chunks"], 8)
        ppkt = two["gpus"][1]["threadblocks"][1]["ops"][0]  # instance 1 of tb 0
        self.assertEqual([d["index"] for d in ppkt["dst_buff"]], [3, 3, 3])
        for name in ("allgather_packets", "allgather_packets_2_instances"):
            self.check_program(name, "allgather", 4, {"ppkt", "upkt"}, protocol="LL")


def _add_program_test(name, collective, ranks, names):
    def test(self):
        self.check_program(name, collective, ranks, names)
    test.__doc__ = "%s emits, verifies and runs exactly" % name
    setattr(ProgramsEmitVerifyAndRun, "test_" + name, test)


for _name, _program, _args, _collective, _ranks, _names in CASES:
    _add_program_test(_name, _collective, _ranks, _names)


class ErrorsNameTheProgramLine(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.results = run_all([(f, os.path.join(PROGRAMS, "bad", f), []) for f in BAD_PROGRAMS])

    def test_bad_programs(self):
        self.assertGreaterEqual(len(BAD_PROGRAMS), 5)
        for program in BAD_PROGRAMS:
            path = os.path.join(PROGRAMS, "bad", program)
            with open(path) as f:
                lines = f.read().splitlines()
            marked = [(n + 1, m.group(1), m.group(2)) for n, line in enumerate(lines)
                      for m in [re.search(r"# expect-error: (\w+): (.*)$", line)] if m]
            self.assertEqual(len(marked), 1, program)
            line, builtin, phrase = marked[0]
            result = self.results[program]
            self.assertNotEqual(result.returncode, 0, program)
            last = result.stderr.strip().splitlines()[-1]
            self.assertIn("%s:%d: " % (path, line), last, program)
            self.assertIn(phrase.strip(), last, program)
            self.assertIn("Mscclpp" + builtin, last, program)

    def test_error_types(self):
        with CollectiveProgram("t", AllReduce(2, 1, True), 2):
            with self.assertRaises(RuntimeError) as caught:
                Rank(0).get_input_buffer()[0:5]
            error = caught.exception
            self.assertIsInstance(error, MscclppProgramError)
            self.assertIsInstance(error, chorus.ProgramError)
            self.assertTrue(str(error).startswith(__file__ + ":"), str(error))
            with self.assertRaises(TypeError):
                Rank(0).get_input_buffer()[0]
        with self.assertRaises(AssertionError):
            CollectiveProgram("t", AllReduce(2, 1, True), 2, protocol="LL128")


def _program(size=2, **kw):
    return CollectiveProgram("q", TestCollective(size, 4, 4), size, **kw)


class PostProcessingAsMscclpp(unittest.TestCase):
    """Facts of MSCCL++ 1f5f065's post-processing that the package reproduces (docs/python.md
    "mscclpp", what differs; each fact was checked against MSCCL++'s own DSL)."""

    def test_sync_ops_share_nops_and_fuse(self):
        with _program(3):
            a, b = MemoryChannel(1, 0), MemoryChannel(2, 0)
            MemoryChannel(0, 1).wait(tb=0), MemoryChannel(0, 2).wait(tb=0)
            a.signal(tb=0)
            b.signal(tb=0)
            a.wait(tb=0, data_sync=SyncType.after)
            MemoryChannel(0, 1).signal(tb=1)
            text = JSON()
        self.assertEqual(tb_ops(text), ["nop", "signal", "nop", "wait", "nop"])
        self.assertEqual(json.loads(text)["gpus"][0]["threadblocks"][0]["ops"][1]["channel_ids"],
                         [0, 1])

    def test_auto_sync_nop_and_lost_access(self):
        # A write-after-write gets a nop; the reference then forgets the op's earlier read, so
        # the following write-after-read gets none.
        with _program(1):
            r = Rank(0)
            i, o, s = r.get_input_buffer(), r.get_output_buffer(), Buffer(0, 4)
            r.copy(o[0:1], i[0:1], tb=0)
            r.copy(o[0:1], s[0:1], tb=0)
            r.copy(s[0:1], i[2:3], tb=0)
            self.assertEqual(tb_ops(JSON()), ["copy", "nop", "copy", "copy"])

    def test_auto_sync_off_and_packet_reduce_exemption(self):
        with _program(1, auto_sync=False):
            r = Rank(0)
            i, o = r.get_input_buffer(), r.get_output_buffer()
            r.copy(o[0:1], i[0:1], tb=0)
            r.copy(o[0:1], i[1:2], tb=0)
            self.assertEqual(tb_ops(JSON()), ["copy", "copy"])
        with _program(1, protocol="LL"):
            r = Rank(0)
            i, o, s = r.get_input_buffer(), r.get_output_buffer(), Buffer(0, 2)
            r.copy(i[0:1], i[1:2], tb=0)
            r.reduce(i[0:1], [s[0:1]], tb=0, dst_chunk=o[0:1], packet=True)
            self.assertEqual(tb_ops(JSON()), ["copy", "repkt"])

    def test_nop_before_pipeline_leaves_its_body_unfused(self):
        bodies = []
        for lead in (False, True):
            with _program(3):
                a, b = MemoryChannel(1, 0), MemoryChannel(2, 0)
                a2, b2 = MemoryChannel(0, 1), MemoryChannel(0, 2)
                if lead:
                    Rank(0).barrier(tb_list=[0])
                with LoopIterationContext(unit=1 << 20, num_chunks=1):
                    a.signal(tb=0)
                    b.signal(tb=0)
                a2.wait(tb=0)
                b2.wait(tb=0)
                bodies.append(tb_ops(JSON()))
        self.assertEqual(bodies[0], [("pipeline", ["nop", "signal", "nop"])])
        self.assertEqual(bodies[1], [("pipeline", ["nop", "signal", "nop", "nop", "signal",
                                                   "nop"])])

    def test_replication_leaves_packet_destination_of_recpkt(self):
        with _program(1, protocol="LL", instances=2):
            r = Rank(0)
            i, s = r.get_input_buffer(), Buffer(0, 2)
            r.reduce(i[0:1], [s[0:1]], tb=0, packet=True)
            r.copy_packets(s[1:2], i[0:1], tb=0)
            plan = json.loads(JSON())
        dsts = [[(d["type"], d["index"]) for d in tb["ops"][0]["dst_buff"]]
                for tb in plan["gpus"][0]["threadblocks"]]
        self.assertEqual(dsts, [[("i", 0), ("s", 1)], [("i", 1), ("s", 1)]])

    def test_fused_signal_channel_order_is_set_order(self):
        with _program(10):
            chans = [MemoryChannel(d, 0) for d in range(1, 10)]
            back = [MemoryChannel(0, d) for d in range(1, 10)]
            for c in chans:
                c.wait(tb=0, data_sync=SyncType.none)
            chans[8].signal(tb=0, data_sync=SyncType.none)
            chans[1].signal(tb=0, data_sync=SyncType.none)
            for c in back:
                c.signal(tb=0, data_sync=SyncType.none)
            back[8].wait(tb=0, data_sync=SyncType.none)
            back[1].wait(tb=0, data_sync=SyncType.none)
            ops = json.loads(JSON())["gpus"][0]["threadblocks"][0]["ops"]
        self.assertEqual([(o["name"], o["channel_ids"]) for o in ops],
                         [("wait", list(range(9))), ("signal", [8, 1])])

    def test_switch_chunk_shared_by_two_ops_is_shifted_twice(self):
        with _program(2, instances=2, instr_fusion=False):
            ch = SwitchChannel(rank_list=[0, 1], buffer_type=BufferType.input)
            c = Buffer(0, 2)[1:2]
            ch.at_rank(0).reduce(buffer_offset=1, size=1, dst_chunk=c, tb=0)
            ch.at_rank(0).broadcast(src_chunk=c, buffer_offset=1, size=1, tb=0)
            plan = json.loads(JSON())
        indices = [tb["ops"][0]["dst_chunk"]["index"] for tb in plan["gpus"][0]["threadblocks"]]
        self.assertEqual(indices, [4, 7])
        self.assertEqual(plan["gpus"][1]["channels"][0]["channel_type"], "switch")

    def test_second_json_post_processes_again(self):
        with _program(2, instances=2):
            MemoryChannel(1, 0).signal(tb=0)
            MemoryChannel(0, 1).wait(tb=0)
            first, second = json.loads(JSON()), json.loads(JSON())
        self.assertEqual(len(first["gpus"][0]["threadblocks"]), 2)
        self.assertEqual(len(second["gpus"][0]["threadblocks"]), 4)

    def test_barrier_ids_count_across_programs(self):
        ids = []
        for k in range(2):
            with _program(1):
                Rank(0).barrier(tb_list=[0, 5 + k])  # tb lists no earlier test used
                ids.append(json.loads(JSON())["gpus"][0]["threadblocks"][0]["ops"][0]["barrier_id"])
        self.assertEqual(ids[1], ids[0] + 1)

    def test_semaphore_and_channel_ids_restart_per_program(self):
        for _ in range(2):
            with _program(2):
                self.assertEqual(MemoryChannel(1, 0).channel_id, 0)
                self.assertEqual(PortChannel(1, 0).channel_id, 0)
                self.assertEqual(Semaphore(0, 1).id, 0)


class ChorusAdditions(unittest.TestCase):
    def test_chorus_plan_and_verify(self):
        with CollectiveProgram("ag", AllGather(2, 1, False), 2) as prog:
            ch = {(r, p): MemoryChannel(p, r) for r in range(2) for p in range(2) if p != r}
            for r in range(2):
                rank = Rank(r)
                rank.copy(rank.get_output_buffer()[r:r + 1], rank.get_input_buffer()[0:1], tb=0)
                ch[(r, 1 - r)].put(Rank(1 - r).get_output_buffer()[r:r + 1],
                                   rank.get_input_buffer()[0:1], tb=0)
                ch[(r, 1 - r)].signal(tb=0, data_sync=SyncType.before)
            for r in range(2):
                ch[(r, 1 - r)].wait(tb=0, data_sync=SyncType.after)
            plan = prog.chorus_plan()
        self.assertIsInstance(plan, chorus.Plan)
        self.assertEqual(plan.ranks, 2)
        self.assertTrue(prog.verify().ok)  # post-processes again: still a correct plan
        self.assertTrue(chorus.run(plan, bytes="1K").ok)

    def test_verify_finds_a_missing_wait(self):
        # The put lands in rank 1's output with nothing ordering it before rank 1 ends.
        with CollectiveProgram("racy", AllGather(2, 1, False), 2) as prog:
            for r in range(2):
                rank = Rank(r)
                rank.copy(rank.get_output_buffer()[r:r + 1], rank.get_input_buffer()[0:1], tb=0)
            MemoryChannel(1, 0).put(Rank(1).get_output_buffer()[0:1],
                                    Rank(0).get_input_buffer()[0:1], tb=0)
            MemoryChannel(0, 1).put(Rank(0).get_output_buffer()[1:2],
                                    Rank(1).get_input_buffer()[0:1], tb=0)
            report = prog.verify()
        self.assertFalse(report.ok)

    def test_import_needs_no_chorus(self):
        compat = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
            emit.__file__))))
        code = ("import sys, mscclpp, mscclpp.language.program, mscclpp.language.general;"
                "assert 'chorus' not in sys.modules, 'chorus imported'")
        result = subprocess.run([PYTHON, "-c", code], capture_output=True, text=True,
                                env=dict(os.environ, PYTHONPATH=os.path.dirname(compat)))
        self.assertEqual(result.returncode, 0, result.stderr)

    def test_emitter_writes_json_dumps_text(self):
        rng = random.Random(7)

        def value(depth):
            kind = rng.randrange(8 if depth < 4 else 4)
            if kind == 0:
                return rng.randrange(-5, 2**65)
            if kind == 1:
                return rng.choice([True, False, None, 1.5, "x\"é\n", ""])
            if kind == 2:
                return rng.choice([0, 1])
            if kind == 3:
                return "s%d" % rng.randrange(3)
            if kind in (4, 5):
                return {rng.choice("abc") + str(k): value(depth + 1)
                        for k in range(rng.randrange(4))}
            return [value(depth + 1) for _ in range(rng.randrange(4))]
        for _ in range(300):
            obj = {"a": value(0), "b": [value(0), {"type": "i", "index": 1, "size": True}],
                   "c": ({"type": "i", "index": 1, "size": 1}, [])}
            for indent in (0, 2, 4):
                self.assertEqual(emit.dumps(obj, indent), json.dumps(obj, indent=indent))


if __name__ == "__main__":
    unittest.main()
