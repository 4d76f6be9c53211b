"""chorus.lang (the DSL in Python) against the C++ DSL.

Each collective gets a Python program written as the library's C++ builder writes it
(src/algorithms/*.cpp); compiled with the same options, both must give the same MSCCL XML.
Run with PYTHONPATH=<build>/python.
"""

import os
import tempfile
import unittest

import numpy

import chorus
from chorus.lang import (AllGather, AllReduce, AllToAll, AllToNext, Broadcast, Buffer, Chunk,
                         CustomCollective, Program, Reduce, ReduceScatter, chunk, library)

THIS_FILE = os.path.basename(__file__)


def ring_reduce_scatter(program, ranks, channels):
    size = len(ranks)
    for r in range(size):
        channel = r % channels if channels > 1 else -1
        c = program.chunk(ranks[(r + 1) % size], Buffer.input, r)
        for step in range(1, size):
            c = program.chunk(ranks[(step + r + 1) % size], Buffer.input, r).reduce(
                c, channel=channel)


def ring_all_gather(program, ranks, buffer, channels):
    size = len(ranks)
    for r in range(size):
        channel = r % channels if channels > 1 else -1
        c = program.chunk(ranks[r], buffer, r)
        for step in range(1, size):
            c = c.copy(ranks[(step + r) % size], buffer, r, channel=channel)


def allreduce_ring(size, channels=1, instances=1, protocol="simple"):
    with Program("allreduce.ring", AllReduce(size, size, in_place=True), instances=instances,
                 protocol=protocol) as program:
        ring_reduce_scatter(program, list(range(size)), channels)
        ring_all_gather(program, list(range(size)), Buffer.input, channels)
    return program


def allgather_ring(size):
    with Program("allgather.ring", AllGather(size, 1)) as program:
        for r in range(size):
            chunk(r, Buffer.input, 0).copy(r, Buffer.output, r)
        ring_all_gather(program, list(range(size)), Buffer.output, 1)
    return program


def reducescatter_ring(size):
    with Program("reducescatter.ring", ReduceScatter(size, 1)) as program:
        ring_reduce_scatter(program, list(range(size)), 1)
        for r in range(size):
            chunk(r, Buffer.input, r).copy(r, Buffer.output, 0)
    return program


def broadcast_chain(size, root, pieces):
    with Program("broadcast.chain", Broadcast(size, pieces, root=root)) as program:
        chunk(root, Buffer.input, 0, pieces).copy(root, Buffer.output, 0)
        for piece in range(pieces):
            held = chunk(root, Buffer.input, piece)
            for v in range(1, size):
                held = held.copy((v + root) % size, Buffer.output, piece)
    return program


def reduce_binomial(size, root):
    with Program("reduce.binomial", Reduce(size, 1, root=root)) as program:
        def rank_of(v):
            return (v + root) % size

        def has_children(v):
            return v % 2 == 0 and v + 1 < size

        for v in range(size):
            if has_children(v) or v == 0:
                chunk(rank_of(v), Buffer.input, 0).copy(rank_of(v), Buffer.output, 0)
        mask = 1
        while mask < size:
            for v in range(0, size - mask, 2 * mask):
                child = v + mask
                partial = Buffer.output if has_children(child) else Buffer.input
                chunk(rank_of(v), Buffer.output, 0).reduce(chunk(rank_of(child), partial, 0))
            mask *= 2
    return program


def alltonext(nodes, gpus):
    size = nodes * gpus
    with Program("alltonext", AllToNext(size, gpus)) as program:
        def relays_outgoing(n, g):
            return n + 1 < nodes and n * gpus + g != n * gpus + gpus - 1

        for src in range(size - 1):
            dst = src + 1
            node, dst_node = src // gpus, dst // gpus
            if node == dst_node:
                chunk(src, Buffer.input, 0, gpus).copy(dst, Buffer.output, 0)
                continue
            for g in range(gpus):
                part = chunk(src, Buffer.input, g)
                if node * gpus + g != src:
                    part = part.copy(node * gpus + g, Buffer.scratch, 0)
                remote = dst_node * gpus + g
                if remote == dst:
                    part.copy(dst, Buffer.output, g)
                    continue
                part = part.copy(remote, Buffer.scratch, 1 if relays_outgoing(dst_node, g) else 0)
                part.copy(dst, Buffer.output, g)
    return program


def xml(program, **options):
    return program.compile(**options).to_string("xml")


class MatchesTheCppDsl(unittest.TestCase):
    """A Python program and the library's C++ builder give the same plan."""

    maxDiff = None  # a mismatch prints the whole XML diff

    def same(self, python_program, name, **request):
        self.assertEqual(xml(python_program), xml(library(name, **request)), name)

    def test_allreduce_ring(self):
        self.same(allreduce_ring(4), "allreduce.ring", ranks=4)
        self.same(allreduce_ring(3, channels=2), "allreduce.ring", ranks=3, channels=2)
        self.same(allreduce_ring(4, instances=2, protocol="LL"), "allreduce.ring", ranks=4,
                  instances=2, protocol="ll")

    def test_allgather_and_reducescatter(self):
        self.same(allgather_ring(5), "allgather.ring", ranks=5)
        self.same(reducescatter_ring(4), "reducescatter.ring", ranks=4)

    def test_alltoall(self):
        with Program("alltoall.direct", AllToAll(4, 1)) as program:
            for src in range(4):
                for dst in range(4):
                    chunk(src, Buffer.input, dst).copy(dst, Buffer.output, src)
        self.same(program, "alltoall.direct", ranks=4)

    def test_broadcast_and_reduce(self):
        self.same(broadcast_chain(4, 1, 2), "broadcast.chain", ranks=4, root=1, pipeline=2)
        self.same(reduce_binomial(5, 2), "reduce.binomial", ranks=5, root=2)

    def test_custom_alltonext(self):
        self.same(alltonext(2, 3), "alltonext", nodes=2, gpus_per_node=3)


class CompilesVerifiesRunsSimulates(unittest.TestCase):
    def test_every_format(self):
        plan = allreduce_ring(4).compile()
        self.assertTrue(plan.to_string("xml").startswith("<algo"))
        self.assertIn('"collective"', plan.to_string("json"))
        self.assertIn("algorithm", plan.to_string("text"))
        self.assertIn("digraph", plan.to_string("dot"))
        with tempfile.TemporaryDirectory() as directory:
            path = os.path.join(directory, "ring.xml")
            plan.write(path)
            self.assertEqual(chorus.load(path)[0].to_string("xml"), plan.to_string("xml"))

    def test_verify(self):
        report = allreduce_ring(3).compile(verify=False).verify()
        self.assertTrue(report.ok, str(report))

    def test_compile_options(self):
        program = allreduce_ring(4)
        fused = program.compile()
        unfused = program.compile(fuse=False, disabled_passes=["prune-waits"])
        self.assertGreater(unfused.steps, fused.steps)
        self.assertIn("fuse-instructions", [name for name, _, _ in fused.passes])
        skipped = {name: skip for name, _, skip in unfused.passes}
        self.assertTrue(skipped["prune-waits"])

    def test_run_exact_inputs(self):
        result = chorus.run(allreduce_ring(4).compile(), count=1000, dtype="int32")
        self.assertTrue(result.ok)
        self.assertEqual(result.checked, 4 * 1000)

    def test_run_numpy_in_and_out(self):
        plan = allgather_ring(3).compile()
        inputs = [numpy.arange(5, dtype=numpy.float32) + 10 * r for r in range(3)]
        result = chorus.run(plan, inputs=inputs)
        expected = numpy.concatenate(inputs)
        for output in result.outputs:
            numpy.testing.assert_array_equal(output, expected)
        summed = chorus.run(allreduce_ring(2).compile(),
                            inputs=[numpy.full(8, 1.5), numpy.full(8, 2.25)])
        numpy.testing.assert_array_equal(summed.outputs[0], numpy.full(8, 3.75))

    def test_wrong_plan_is_reported(self):
        with Program("wrong", AllGather(2, 1)) as program:
            chunk(0, Buffer.input, 0).copy(0, Buffer.output, 0)
            chunk(0, Buffer.input, 0).copy(1, Buffer.output, 0)
            chunk(1, Buffer.input, 0).copy(1, Buffer.output, 1)
            chunk(0, Buffer.input, 0).copy(0, Buffer.output, 1)  # should be rank 1's chunk
        self.assertEqual(len(program.check()), 1)
        self.assertIn("rank 0 output[1] holds in(0,0)", program.check()[0])
        with self.assertRaises(chorus.CompileError):
            program.compile()

    def test_simulate(self):
        plan = library("allreduce.ring", ranks=16).compile()
        small = chorus.simulate(plan, topology="dgx-a100", bytes="1M")
        large = chorus.simulate(plan, topology="dgx-a100", bytes="64M")
        self.assertEqual(small["nodes"], 2)
        self.assertGreater(large.seconds, small.seconds)
        self.assertGreater(large.busbw, 0)

    def test_library(self):
        names = [a["name"] for a in chorus.lang.algorithms()]
        self.assertIn("allreduce.ring", names)
        backward = library("alltonext", nodes=2, gpus_per_node=2, direction="backward")
        self.assertEqual(backward.collective.name, "alltonext-backward")
        with self.assertRaisesRegex(chorus.OptionError, "allreduce.ring"):
            library("allreduce.rnig", ranks=4)


class CustomCollectives(unittest.TestCase):
    def shift(self, name, size=3):
        return CustomCollective(name, size, input_chunks=2, output_chunks=2,
                                postcondition=lambda r, i: Chunk((r - 1) % size, i))

    def test_checked_like_a_builtin(self):
        collective = self.shift("py-shift")
        self.assertEqual(collective.postcondition(0, 1), Chunk(2, 1))
        with Program("shift", collective) as program:
            for r in range(3):
                chunk(r, Buffer.input, 0, 2).copy((r + 1) % 3, Buffer.output, 0)
        self.assertEqual(program.check(), [])
        plan = program.compile()
        self.assertEqual(plan.collective, "py-shift")
        self.assertTrue(plan.verify().ok)
        self.assertTrue(chorus.run(plan, count=64, dtype="int64").ok)
        reread = chorus.parse(plan.to_string("xml"))[0]
        self.assertTrue(reread.verify().postcondition_checked)

    def test_wrong_custom_program(self):
        with Program("shift", self.shift("py-shift-2")) as program:
            for r in range(3):
                chunk(r, Buffer.input, 0, 2).copy(r, Buffer.output, 0)
        self.assertEqual(len(program.check()), 6)
        with self.assertRaisesRegex(chorus.CompileError, "py-shift|shift"):
            program.compile()

    def test_reduction_postcondition_and_precondition(self):
        # Ranks 0 and 1 each hold one chunk; rank 2 must end with their sum.
        collective = CustomCollective(
            "py-sum-to-2", 3, 1, 1, precondition=lambda r, i: r < 2,
            postcondition=lambda r, i: Chunk(0, 0) + Chunk(1, 0) if r == 2 else None)
        with Program("sum", collective) as program:
            with self.assertRaises(chorus.ProgramError):
                chunk(2, Buffer.input, 0)
            total = chunk(0, Buffer.input, 0).copy(2, Buffer.output, 0)
            total.reduce(chunk(1, Buffer.input, 0))
        self.assertEqual(program.check(), [])
        self.assertTrue(program.compile().verify().ok)

    def test_bad_tables(self):
        with self.assertRaisesRegex(chorus.OptionError, "not an input chunk"):
            CustomCollective("py-bad", 2, 1, 1, postcondition=lambda r, i: Chunk(5, 0))
        with self.assertRaisesRegex(chorus.OptionError, "built-in"):
            CustomCollective("allreduce", 2, 1, 1, postcondition=lambda r, i: None)
        with self.assertRaisesRegex(chorus.OptionError, "chorus defines"):
            CustomCollective("alltonext", 2, 1, 1, postcondition=lambda r, i: None)


class ErrorsNameThePythonLine(unittest.TestCase):
    def line_of(self, marker):
        with open(__file__) as source:
            for number, text in enumerate(source, 1):
                if marker in text and "line_of" not in text:
                    return number
        raise AssertionError(marker)

    def test_out_of_range(self):
        with Program("p", AllReduce(2, 1)):
            with self.assertRaises(chorus.ProgramError) as caught:
                chunk(0, Buffer.input, 7)  # MARK-out-of-range
        message = str(caught.exception)
        self.assertTrue(message.startswith("%s:%d:" % (__file__, self.line_of("MARK-out-of-range"))),
                        message)
        self.assertIn("out of range", message)
        self.assertNotIn(".cpp", message)

    def test_stale_reference_names_both_lines(self):
        with Program("p", AllReduce(2, 1)):
            first = chunk(0, Buffer.input, 0)
            chunk(1, Buffer.input, 0).copy(0, Buffer.input, 0)  # MARK-overwrite
            with self.assertRaises(chorus.ProgramError) as caught:
                first.copy(1, Buffer.output, 0)  # MARK-stale
        message = str(caught.exception)
        self.assertIn("%s:%d" % (THIS_FILE, self.line_of("MARK-stale")), message)
        self.assertIn("%s:%d" % (THIS_FILE, self.line_of("MARK-overwrite")), message)

    def test_uninitialized_and_parallelize(self):
        with Program("p", AllGather(2, 1)) as program:
            with self.assertRaisesRegex(chorus.ProgramError, "uninitialized"):
                chunk(0, Buffer.output, 0)
            with self.assertRaises(chorus.ProgramError) as caught:
                with program.parallelize(0):  # MARK-parallel
                    pass
        self.assertIn("%s:%d" % (THIS_FILE, self.line_of("MARK-parallel")),
                      str(caught.exception))

    def test_compile_errors_name_python_lines(self):
        with Program("manual", AllGather(3, 1)) as program:
            for r in range(3):
                own = chunk(r, Buffer.input, 0)
                own.copy(r, Buffer.output, r)
                for peer in range(3):
                    if peer != r:
                        # One threadblock cannot send to two peers.
                        own.copy(peer, Buffer.output, r, send_tb=0, recv_tb=0)  # MARK-manual
        with self.assertRaises(chorus.CompileError) as caught:
            program.compile()
        self.assertIn("traced at %s:%d" % (__file__, self.line_of("MARK-manual")),
                      str(caught.exception))

    def test_chunk_outside_a_program(self):
        with self.assertRaisesRegex(chorus.ProgramError, "inside `with Program"):
            chunk(0, Buffer.input, 0)


if __name__ == "__main__":
    unittest.main()
