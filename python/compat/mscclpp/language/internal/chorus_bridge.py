"""chorus's reader, verifier and runtime for a program's plan (chorus imported on first use)."""

import os

from .errors import fail

__all__ = ["plan_of"]

_registered = False


def _chorus():
    global _registered
    import chorus
    import chorus.lang

    if not _registered:
        # chorus's own errors then name the user's line, never a frame of this package.
        chorus.lang.register_internal_dir(
            os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
        _registered = True
    return chorus


def plan_of(program, text):
    """The chorus.Plan of ``text`` (the program's JSON); a plan chorus cannot read (LL packet
    operations, pipelines, switch channels today) raises the error type of this package with
    chorus's reason."""
    chorus = _chorus()
    try:
        plans = chorus.parse(text, "%s.json" % program.name)
    except chorus.Error as e:
        fail("chorus cannot read plan '%s': %s" % (program.name, e), RuntimeError)
    if len(plans) != 1:
        fail("chorus read %d plans from '%s', expected 1" % (len(plans), program.name))
    return plans[0]
