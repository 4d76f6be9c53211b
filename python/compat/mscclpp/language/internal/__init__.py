"""Internals of the ``mscclpp`` compatibility package: state, operations, post-processing."""
