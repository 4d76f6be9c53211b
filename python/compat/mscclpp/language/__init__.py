"""MSCCL++'s DSL on chorus (see the ``mscclpp`` package docstring)."""

from .utils import *  # noqa: F401,F403  (AlgoSpec, ReplicationPolicy, as MSCCL++ exports them)
