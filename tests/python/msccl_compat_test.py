"""The msccl compatibility package (python/compat/msccl) on chorus.

Every program in msccl_programs/ runs as msccl-tools programs do (a subprocess printing XML);
its XML must parse, pass chorus's verifier and compute its collective on thread ranks. The
programs in msccl_programs/bad/ must fail with an error naming the line marked
``# expect-error: PHRASE`` and containing PHRASE. Run with
PYTHONPATH=<build>/python:<build>/python/compat.
"""

import concurrent.futures
import contextlib
import importlib.util
import io
import os
import re
import subprocess
import sys
import unittest

import chorus
from msccl.language import (XML, Buffer, Check, MSCCLProgram, MscclProgramError, ThreadblockPolicy,
                            chorus_collective, chunk)
from msccl.language.collectives import AllReduce, AllToAll, Collective
from msccl.language.chunk import Chunk, ReduceChunk
from msccl.topologies import dgx1, fully_connected, line, ring

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAMS = os.path.join(HERE, "msccl_programs")
PYTHON = sys.executable

# (test name, program file, arguments)
CASES = [
    ("allreduce_ring_manual", "allreduce_ring_manual.py", ["4", "2", "1"]),
    ("allreduce_ring_manual_ll128", "allreduce_ring_manual.py",
     ["4", "1", "1", "--protocol", "LL128"]),
    ("allreduce_ring_auto", "allreduce_ring_auto.py", ["4", "1"]),
    ("allreduce_ring_auto_instances", "allreduce_ring_auto.py", ["3", "2"]),
    ("allreduce_allpairs", "allreduce_allpairs.py", ["4", "1"]),
    ("allreduce_hierarchical", "allreduce_hierarchical.py", ["2", "2", "1"]),
    ("allreduce_hierarchical_manual", "allreduce_hierarchical.py",
     ["2", "2", "2", "--schedule", "manual", "--protocol", "LL"]),
    ("allreduce_recursive_doubling_halving", "allreduce_recursive_doubling_halving.py",
     ["4", "1"]),
    ("alltoall_two_step", "alltoall_two_step.py", ["2", "2"]),
    ("alltoall_three_step", "alltoall_three_step.py", ["2", "2", "2"]),
    ("alltoall_three_step_one_ib", "alltoall_three_step.py",
     ["2", "3", "1", "--ib_connections", "1"]),
    ("alltonext_forward", "alltonext_forward.py", ["2", "2", "2"]),
    ("alltonext_backward", "alltonext_backward.py", ["3", "2", "1"]),
    ("allgather_ring", "allgather_ring.py", ["4", "2", "1", "--protocol", "LL"]),
    ("allgather_allpairs", "allgather_allpairs.py", ["4", "2"]),
    ("allgather_recursive_doubling", "allgather_recursive_doubling.py", ["4", "1"]),
    ("alltoall_allpairs", "alltoall_allpairs.py", ["3", "2", "--protocol", "LL128"]),
    ("reducescatter_allpairs", "reducescatter_allpairs.py", ["4", "1"]),
    ("custom_collective", "custom_collective.py", ["4", "2", "2", "1"]),
    ("allreduce_allpairs_manual", "allreduce_allpairs_manual.py", ["4", "2"]),
    ("allreduce_allpairs_manual_3", "allreduce_allpairs_manual.py",
     ["3", "1", "--protocol", "Simple"]),
    ("allreduce_ring_auto_six", "allreduce_ring_auto.py", ["6", "1"]),
]

BAD_PROGRAMS = ["uninitialized_chunk.py", "out_of_range_index.py", "unlinked_copy.py",
                "wrong_postcondition.py", "manual_tb_conflict.py"]


def run_program(path, args):
    """Runs one program as a user would; returns the CompletedProcess."""
    return subprocess.run([PYTHON, path] + list(args), capture_output=True, text=True,
                          timeout=120, env=dict(os.environ))


def run_all(jobs):
    """{name: CompletedProcess} for [(name, path, args)], a few at a time."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        futures = {name: pool.submit(run_program, path, args) for name, path, args in jobs}
        return {name: future.result() for name, future in futures.items()}


def load_module(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class ProgramsCompileVerifyAndRun(unittest.TestCase):
    """Each program's printed XML parses, verifies and runs correctly on thread ranks."""

    @classmethod
    def setUpClass(cls):
        cls.results = run_all([(name, os.path.join(PROGRAMS, program), args)
                               for name, program, args in CASES])
        # The custom collective is known to this process as the program's own process knows
        # it: registered under the program name by the msccl package.
        custom = load_module(os.path.join(PROGRAMS, "custom_collective.py"), "custom_shift")
        chorus_collective(custom.make_collective(4, 2, 2), "shift")

    def check_program(self, name):
        result = self.results[name]
        self.assertEqual(result.returncode, 0, "%s failed:\n%s" % (name, result.stderr))
        start = result.stdout.find("<algo")
        self.assertGreaterEqual(start, 0, "%s printed no XML:\n%s" % (name, result.stdout))
        plans = chorus.parse(result.stdout[start:], name + ".xml")
        self.assertEqual(len(plans), 1)
        plan = plans[0]
        report = plan.verify()
        self.assertTrue(report.ok, "%s: %s" % (name, report))
        run = chorus.run(plan, bytes="4K", timeout=60)
        self.assertTrue(run.ok and run.postcondition_known, "%s: %r" % (name, run))


def _add_program_test(name):
    def test(self):
        self.check_program(name)
    test.__doc__ = "%s %s" % next((p, " ".join(a)) for n, p, a in CASES if n == name)
    setattr(ProgramsCompileVerifyAndRun, "test_" + name, test)


for _name, _program, _args in CASES:
    _add_program_test(_name)


class ManualThreadblocks(unittest.TestCase):
    """Manual threadblock ids become dense XML ids, as in msccl-tools' output."""

    def test_ids_a_rank_does_not_use_leave_no_empty_threadblock(self):
        # Rank q's copies use threadblocks r != q and its reductions size + r (r != q): ids q
        # and size + q stay unused, and must not become empty <tb> elements.
        result = run_program(os.path.join(PROGRAMS, "allreduce_allpairs_manual.py"), ["4", "1"])
        self.assertEqual(result.returncode, 0, result.stderr)
        for gpu in re.findall(r"<gpu .*?</gpu>", result.stdout, flags=re.S):
            ids = [int(i) for i in re.findall(r'<tb id="(\d+)"', gpu)]
            self.assertEqual(ids, list(range(6)), gpu[:200])
            self.assertNotRegex(gpu, r"<tb [^>]*>\s*</tb>")


def _hinted_program(rng):
    """A correct AllReduce, AllToAll or AllGather whose copies and reduces carry random
    threadblock and channel hints; returns after XML() (its output is discarded)."""
    size = rng.randint(2, 5)
    policy = rng.choice([ThreadblockPolicy.manual, ThreadblockPolicy.auto])
    tb_ids = [-1] + list(range(2 * size))

    def transfer():
        return dict(sendtb=rng.choice(tb_ids), recvtb=rng.choice(tb_ids),
                    ch=rng.choice([-1, 0, 1, 2]))

    def local():
        return dict(sendtb=rng.choice(tb_ids))

    shape = rng.choice(["ring", "allpairs", "alltoall"])
    collective = (AllToAll(size, 1, False) if shape == "alltoall"
                  else AllReduce(size, size, True))
    with MSCCLProgram("hinted", fully_connected(size), collective, rng.randint(1, 3),
                      protocol=rng.choice(["Simple", "LL", "LL128"]),
                      threadblock_policy=policy):
        if shape == "ring":
            for r in range(size):
                c = chunk(r, Buffer.input, r)
                for hop in range(1, size):
                    c = chunk((r + hop) % size, Buffer.input, r).reduce(c, **transfer())
                for hop in range(size, 2 * size - 1):
                    c = c.copy((r + hop) % size, Buffer.input, r, **transfer())
        elif shape == "allpairs":
            for r in range(size):
                for q in range(size):
                    if q != r:
                        chunk(r, Buffer.input, q).copy(q, "scratch", r, **transfer())
            for q in range(size):
                for r in range(size):
                    if r != q:
                        chunk(q, Buffer.input, q).reduce(chunk(q, "scratch", r), **local())
            for q in range(size):
                for r in range(size):
                    if r != q:
                        chunk(q, Buffer.input, q).copy(r, Buffer.input, q, **transfer())
        else:
            for r in range(size):
                for q in range(size):
                    chunk(r, Buffer.input, q).copy(q, Buffer.output, r, **transfer())
        XML()


class RandomHints(unittest.TestCase):
    """Any mix of manual threadblock and channel hints on a correct program compiles or is
    refused with a message naming this file's line; never an internal error."""

    def test_random_hints_compile_or_name_the_line(self):
        import random
        compiled = 0
        for seed in range(600):
            rng = random.Random(seed)
            try:
                with contextlib.redirect_stdout(io.StringIO()):
                    _hinted_program(rng)
                compiled += 1
            except (chorus.CompileError, MscclProgramError) as error:
                self.assertNotIn("internal error", str(error), "seed %d" % seed)
                self.assertIn(os.path.basename(__file__) + ":", str(error), "seed %d" % seed)
        # Most draws are consistent; the test would pass vacuously if none compiled.
        self.assertGreater(compiled, 300)


class SynthesisCollectives(unittest.TestCase):
    """msccl.collectives: msccl-tools' specifications (precondition, postcondition, address)."""

    def test_star_import_gives_msccl_tools_names(self):
        names = {}
        exec("from msccl.collectives import *", names)
        for name in ["Chunk", "Collective", "build_collective", "broadcast", "scatter", "gather",
                     "allgather", "alltoall", "reduce", "allreduce", "reduce_scatter", "scan",
                     "multiroot_broadcast", "multiroot_scatter", "multiroot_gather",
                     "dataclass", "ABC", "abstractmethod"]:
            self.assertIn(name, names)

    def test_allreduce_combines_one_chunk_per_rank(self):
        from msccl import collectives
        spec = collectives.allreduce(3)
        self.assertEqual((spec.name, spec.num_nodes, spec.num_chunks, spec.num_addresses,
                          spec.is_combining, spec.runtime_name),
                         ("Allreduce(n=3)", 3, 3, 1, True, "allreduce"))
        self.assertEqual([[spec.precondition(r, c) for c in spec.chunks()] for r in spec.ranks()],
                         [[True, False, False], [False, True, False], [False, False, True]])
        self.assertTrue(all(spec.postcondition(r, c) for r in range(3) for c in range(3)))

    def test_alltoall_and_reduce_scatter_transpose(self):
        from msccl import collectives
        a2a = collectives.alltoall(2)
        # Chunk c starts on rank c mod n and ends on rank c // n, as msccl-tools defines it.
        self.assertEqual([sorted(a2a._chunks[c].precondition) for c in a2a.chunks()],
                         [[0], [1], [0], [1]])
        self.assertEqual([sorted(a2a._chunks[c].postcondition) for c in a2a.chunks()],
                         [[0], [0], [1], [1]])
        self.assertFalse(a2a.is_combining)
        rs = collectives.reduce_scatter(2)
        self.assertEqual([rs.address(c) for c in rs.chunks()], [0, 0, 1, 1])
        self.assertEqual(rs.runtime_name, "reduce_scatter")

    def test_rooted_scan_and_multiroot(self):
        from msccl import collectives
        self.assertEqual(sorted(collectives.broadcast(4, 2)._chunks[0].precondition), [2])
        self.assertEqual(sorted(collectives.gather(3, 1)._chunks[0].postcondition), [1])
        scan = collectives.scan(3)
        self.assertEqual([sorted(c.postcondition) for c in scan._chunks],
                         [[0, 1, 2], [1, 2], [2]])
        roots = collectives.multiroot_broadcast(4, [0, 3])
        self.assertEqual(roots.name, "MultirootBroadcast(n=4,roots=(0,3))")
        self.assertEqual([sorted(c.precondition) for c in roots._chunks], [[0], [3]])

    def test_chunk_up_and_triggers(self):
        from msccl import collectives
        spec = collectives.build_collective("t", 2, 2, lambda r, c: r == c, lambda r, c: True,
                                            trigger=lambda r, c: 7 if (r, c) == (1, 0) else None,
                                            runtime_name="x")
        self.assertTrue(spec.has_triggers())
        self.assertEqual((spec.trigger(1, 0), spec.trigger(0, 0)), (7, None))
        split = spec.chunk_up(2)
        self.assertEqual((split.name, split.num_chunks, split.runtime_name, split.has_triggers()),
                         ("t,chunks=2", 4, "custom", False))
        self.assertEqual([split.address(c) for c in split.chunks()], [0, 1, 2, 3])
        self.assertIs(spec.chunk_up(1), spec)
        with self.assertRaisesRegex(ValueError, "at least 1"):
            spec.chunk_up(0)


class RejectedProgramsNameTheirLine(unittest.TestCase):
    """Programs msccl-tools would reject fail with an error naming the marked line."""

    @classmethod
    def setUpClass(cls):
        cls.results = run_all([(bad, os.path.join(PROGRAMS, "bad", bad), [])
                               for bad in BAD_PROGRAMS])

    def check_rejected(self, program):
        path = os.path.join(PROGRAMS, "bad", program)
        with open(path) as source:
            marked = [(number, re.search(r"# expect-error: (.*)$", line).group(1).strip())
                      for number, line in enumerate(source, 1) if "# expect-error:" in line]
        self.assertEqual(len(marked), 1, "%s needs one '# expect-error:' line" % program)
        line, phrase = marked[0]
        result = self.results[program]
        self.assertNotEqual(result.returncode, 0, "%s was accepted" % program)
        # Traceback lines say 'File "path", line N'; only chorus's messages say path:N.
        self.assertRegex(result.stderr, r"%s:%d\b" % (re.escape(path), line))
        self.assertIn(phrase, result.stderr)
        self.assertNotIn("<algo", result.stdout)
        return result

    def test_uninitialized_chunk(self):
        self.check_rejected("uninitialized_chunk.py")

    def test_out_of_range_index(self):
        self.check_rejected("out_of_range_index.py")

    def test_copy_between_unlinked_ranks(self):
        self.check_rejected("unlinked_copy.py")

    def test_wrong_postcondition(self):
        result = self.check_rejected("wrong_postcondition.py")
        self.assertIn("Check() returned False", result.stdout)
        self.assertIn("is incorrect", result.stdout)

    def test_manual_threadblock_conflict(self):
        self.check_rejected("manual_tb_conflict.py")


def ring_allreduce(size, hops=None):
    """A ring AllReduce traced into the program in context; ``hops`` cuts the all-gather."""
    for index in range(size):
        c = chunk(index, Buffer.input, index)
        for step in range(1, size):
            c = chunk((index + step) % size, Buffer.input, index).reduce(c)
        for step in range(size - 1 if hops is None else hops):
            c = c.copy((index + step) % size, Buffer.input, index)


class ApiBehavesAsMscclTools(unittest.TestCase):
    """msccl-tools' semantics that programs rely on, in this process."""

    def check_quietly(self):
        """Check() and what it printed."""
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            result = Check()
        return result, printed.getvalue()

    def test_check_is_false_for_a_wrong_program(self):
        with MSCCLProgram("wrong", ring(3), AllReduce(3, 3, True), 1):
            ring_allreduce(3, hops=1)
            result, printed = self.check_quietly()
        self.assertIs(result, False)
        self.assertIn("Rank 0 chunk 2 is incorrect", printed)
        with MSCCLProgram("right", ring(3), AllReduce(3, 3, True), 1):
            ring_allreduce(3)
            self.assertEqual(self.check_quietly(), (True, ""))

    def test_double_reduction_is_caught(self):
        with MSCCLProgram("twice", fully_connected(2), AllReduce(2, 1, True), 1):
            c = chunk(1, Buffer.input, 0).reduce(chunk(0, Buffer.input, 0))
            c.reduce(chunk(0, Buffer.input, 0))
            c.copy(0, Buffer.input, 0)
            result, printed = self.check_quietly()
        self.assertIs(result, False)
        self.assertIn("(0, 0), (0, 0), (1, 0)", printed)

    def test_empty_slot_is_none_and_same_place_copy_is_none(self):
        with MSCCLProgram("none", fully_connected(2), AllToAll(2, 1, False), 1):
            self.assertIsNone(chunk(0, Buffer.output, 0))
            c = chunk(0, Buffer.input, 1)
            self.assertIsNone(c.copy(0, Buffer.input, 1))
            self.assertEqual(c.copy(1, Buffer.output, 0), chunk(1, Buffer.output, 0))

    def test_named_scratch_appends_and_lays_out_in_creation_order(self):
        with MSCCLProgram("scratch", fully_connected(3), AllReduce(3, 3, False), 1) as prog:
            chunk(0, Buffer.input, 0).copy(2, "scratch", 2)
            self.assertEqual(chunk(2, "scratch", 2).index, 2)
            self.assertIsNone(chunk(2, "scratch", 0))
            self.assertEqual(chunk(1, Buffer.input, 0).copy(2, "scratch").index, 3)
            self.assertEqual(chunk(1, Buffer.input, 1).copy(2, ("pair", 1)).index, 0)
            program = prog.chorus_program()
        self.assertEqual(prog.buffers[2]["scratch"].offset, 0)
        self.assertEqual(prog.buffers[2][("pair", 1)].offset, 4)
        self.assertEqual(program.value(2, chorus.lang.Buffer.scratch, 4),
                         chorus.lang.Chunk(1, 1))

    def test_refs_read_the_current_value_and_split_and_group(self):
        with MSCCLProgram("refs", fully_connected(2), AllToAll(2, 2, False), 1):
            c = chunk(0, Buffer.input, 0, 4)
            halves = c.split(2)
            self.assertEqual([h.index for h in halves], [0, 2])
            self.assertEqual(halves[1].group(halves[0]), c)
            self.assertEqual(c.get_dst_rank(2), 1)
            self.assertEqual(c.get_dst_index(3), 1)
            with self.assertRaises(MscclProgramError):
                c.split(3)

    def test_errors_are_assertion_errors_naming_this_file(self):
        with MSCCLProgram("link", line(3), AllReduce(3, 1, True), 1):
            with self.assertRaises(AssertionError) as caught:
                chunk(0, Buffer.input, 0).copy(2, Buffer.input, 0)
        self.assertRegex(str(caught.exception),
                         r"^.*msccl_compat_test\.py:\d+: copy\(\): no link from rank 0 to rank 2")
        self.assertIsInstance(caught.exception, chorus.ProgramError)

    def test_alltonext_names_need_the_alltonext_collective(self):
        class Skip(Collective):
            def init_buffers(self):
                return [{Buffer.input: [Chunk(r, 0, (r + 2) % 4, 0)],
                         Buffer.output: [None]} for r in range(4)]

        with self.assertRaisesRegex(MscclProgramError, "names chorus's built-in AllToNext"):
            MSCCLProgram("alltonext-forward", fully_connected(4), Skip(4, 1, False), 1)

    def test_reduce_chunks_compare_as_multisets(self):
        a, b = Chunk(0, 1), Chunk(1, 1)
        self.assertEqual(a.reduce(0, b), b.reduce(1, a))
        self.assertNotEqual(a.reduce(0, b), a.reduce(0, b).reduce(0, a))
        self.assertEqual(ReduceChunk(-1, []).reduce(-1, a), ReduceChunk(3, [a]))

    def test_topologies_link_as_msccl_tools(self):
        self.assertTrue(ring(4).link(3, 0))
        self.assertFalse(ring(4).link(0, 2))
        self.assertFalse(line(4).link(3, 0))
        self.assertEqual(dgx1().link(0, 1), 2)
        self.assertFalse(dgx1().link(0, 5))
        self.assertEqual(fully_connected(3).num_nodes(), 3)

    def test_manual_threadblocks_with_instances(self):
        """Manual threadblock t of instance i becomes t * instances + i, as in msccl-tools."""
        with MSCCLProgram("manual2", ring(3), AllReduce(3, 3, True), 2,
                          threadblock_policy=ThreadblockPolicy.manual) as prog:
            for index in range(3):
                c = chunk(index, Buffer.input, index)
                for step in range(1, 3):
                    c = chunk((index + step) % 3, Buffer.input, index).reduce(
                        c, sendtb=0, recvtb=0, ch=0)
                for step in range(2):
                    c = c.copy((index + step) % 3, Buffer.input, index, sendtb=0, recvtb=0,
                               ch=0)
            self.assertTrue(Check())
        plan = prog.lower()
        self.assertEqual(plan.threadblocks, 3 * 2)
        xml = plan.to_string("xml")
        self.assertIn('<tb id="1"', xml)
        self.assertNotIn('<tb id="2"', xml)
        self.assertTrue(chorus.run(plan, bytes="4K").ok)


if __name__ == "__main__":
    unittest.main()
