"""Errors for programs MSCCL++'s DSL rejects, located at the user's program line.

Each error keeps the Python type MSCCL++ raises for the same mistake (RuntimeError, ValueError,
TypeError, AttributeError, AssertionError), so ``except`` clauses written for MSCCL++ behave the
same; it is also a ``MscclppProgramError`` and, when chorus is importable, a
``chorus.ProgramError``. Its message starts with the program's "file:line: ".
"""

import os
import sys

__all__ = ["MscclppProgramError", "fail", "caller_location"]

# Frames in these directories are this package's, never the user's program.
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class MscclppProgramError(Exception):
    """A program MSCCL++'s DSL would reject; the message names the program line."""

    __module__ = "mscclpp.language"


_classes = {}


def _error_class(builtin):
    """MscclppProgramError combined with ``builtin`` (and chorus.ProgramError if importable).
    chorus is imported here, lazily: emitting a plan never needs it."""
    cls = _classes.get(builtin)
    if cls is None:
        bases = [MscclppProgramError]
        try:
            import chorus

            bases.append(chorus.ProgramError)
        except ImportError:
            pass
        bases.append(builtin)
        cls = type("Mscclpp" + builtin.__name__, tuple(bases), {"__module__": "mscclpp.language"})
        _classes[builtin] = cls
    return cls


def caller_location():
    """"file:line" of the innermost frame outside this package (the user's program line)."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not os.path.abspath(filename).startswith(_PACKAGE_DIR + os.sep):
            return "%s:%d" % (filename, frame.f_lineno)
        frame = frame.f_back
    return "<unknown>:0"


def fail(message, builtin=RuntimeError, where=None):
    """Raises the error for ``builtin`` with "file:line: message"."""
    raise _error_class(builtin)("%s: %s" % (where or caller_location(), message))
