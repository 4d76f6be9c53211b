"""JSON(): the current program's execution plan."""

from .internal.globals import get_program

__all__ = ["JSON", "get_program"]


def JSON():
    """Post-processes the current program and returns its plan as JSON text (indent 2); as in
    MSCCL++, every call post-processes the program again."""
    return get_program().to_json()
