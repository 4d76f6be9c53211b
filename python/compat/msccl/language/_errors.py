"""Errors for programs msccl-tools would reject, located at the user's program line."""

import chorus
from chorus.lang import caller_location

__all__ = ["MscclProgramError", "fail", "caller_location"]


class MscclProgramError(chorus.ProgramError, AssertionError):
    """A program msccl-tools would reject (there an AssertionError or worse, here a
    ``chorus.ProgramError`` whose message starts with the program's "file:line")."""

    __module__ = "msccl.language"


def fail(what, message, where=None):
    """Raises MscclProgramError "file:line: what: message" (the first frame outside chorus's
    and this package's code when ``where`` is None)."""
    raise MscclProgramError("%s: %s: %s" % (where or caller_location(), what, message))
