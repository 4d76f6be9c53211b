"""The program being traced (one per process, as in MSCCL++)."""

from .errors import fail

_current_program = None


def set_program(program):
    global _current_program
    _current_program = program


def get_program():
    """The program of the ``with CollectiveProgram(...)`` entered last (none after its end)."""
    if _current_program is None:
        fail("No Program in context")
    return _current_program
