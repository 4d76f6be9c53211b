"""msccl: msccl-tools' MSCCLang API on chorus's compiler and verifier.

Programs written for microsoft/msccl-tools (``from msccl.language import *``,
``from msccl.topologies import *``, ``from msccl.language.collectives import AllReduce``) run
unchanged: they are traced here, replayed into ``chorus.lang`` and compiled, verified and
printed as MSCCL XML by chorus. Use with ``PYTHONPATH=<build>/python:<build>/python/compat``.
docs/python.md lists where chorus behaves differently from msccl-tools.
"""

import os

import chorus.lang

# Errors raised while tracing name the user's program line, never a frame of this package.
chorus.lang.register_internal_dir(os.path.dirname(os.path.abspath(__file__)))

from . import collectives, language, topologies  # noqa: E402  (after registering the directory)

__all__ = ["collectives", "language", "topologies"]
