"""LoopIterationContext: the operations traced inside become one ``pipeline`` op per (rank, tb)."""

from .internal.globals import get_program, set_program
from .internal.ops import Pipeline

__all__ = ["LoopIterationContext", "get_program", "set_program"]


class LoopIterationContext:
    """``with LoopIterationContext(unit, num_chunks):`` pipelines the operations traced inside
    over ``num_chunks`` chunks of ``unit`` size. Channels, remote buffers and threadblocks are
    set up when each operation is traced; the operations are placed when the block ends."""

    def __init__(self, unit, num_chunks):
        self.unit = unit
        self.num_chunks = num_chunks
        self.operations = []

    def __enter__(self):
        get_program().set_loop_context(self)

    def __exit__(self, exc_type, exc_value, traceback):
        prog = get_program()
        prog.set_loop_context(None)
        pipelines = {}
        for rank, tb, op in self.operations:
            pipe = pipelines.get((rank, tb))
            if pipe is None:
                pipe = pipelines[(rank, tb)] = Pipeline(self.unit, self.num_chunks, [])
            pipe.ops.append(op)
        for (rank, tb), pipe in pipelines.items():
            prog.add_operation(rank, tb, pipe)

    def add_operation(self, rank, tb, operation):
        self.operations.append((rank, tb, operation))
