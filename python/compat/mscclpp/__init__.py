"""mscclpp: MSCCL++'s Python DSL (``mscclpp.language``) on chorus.

Programs written for microsoft/mscclpp's DSL (``from mscclpp.language.program import *`` and the
other modules of ``mscclpp.language``) run unchanged and print the same JSON execution plan as
MSCCL++'s own DSL at commit 1f5f065, which chorus then reads (``chorus.parse``), verifies and runs.
Use with ``PYTHONPATH=<build>/python:<build>/python/compat``.

``CollectiveProgram.chorus_plan()`` and ``CollectiveProgram.verify()`` are chorus's additions.
Emitting JSON needs nothing of chorus; chorus is imported only by those two methods (and to type
an error as ``chorus.ProgramError`` when chorus is importable). docs/python.md ("mscclpp") lists
where this package differs from MSCCL++.

Only ``mscclpp.language`` is provided: MSCCL++'s runtime (its C++ extension, ``mscclpp.compile``,
``default_algos``) is not part of this package.
"""
