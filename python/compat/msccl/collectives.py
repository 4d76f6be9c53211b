"""msccl.collectives: msccl-tools' collective specifications for synthesis.

A ``Collective`` here is a set of chunks, each with the ranks that hold it before
(``precondition``) and after (``postcondition``) the collective and an ``address``: chunks that
share an address are reduced together (``is_combining``). msccl-tools' synthesizer consumes
these; MSCCLang programs import the module (``from msccl.collectives import *``) alongside
``msccl.language``, so the names and their meaning match msccl-tools' module of the same name
(microsoft/msccl-tools, msccl/collectives.py). ``chorus synthesize`` is chorus's own
synthesizer; these objects are the specification API only.
"""

from abc import ABC, abstractmethod  # noqa: F401  (msccl-tools' star import exports them)
from dataclasses import dataclass

__all__ = ["ABC", "abstractmethod", "dataclass", "Chunk", "Collective", "build_collective",
           "broadcast", "scatter", "gather", "allgather", "alltoall", "reduce", "allreduce",
           "reduce_scatter", "scan", "multiroot_broadcast", "multiroot_scatter",
           "multiroot_gather"]


@dataclass
class Chunk:
    """One chunk: the ranks holding it before and after, and the address it is reduced at."""
    precondition: set
    postcondition: set
    address: int


class Collective:
    """A collective on ``num_nodes`` ranks over ``chunks`` (a list of ``Chunk``).

    ``triggers`` maps (rank, chunk) to a trigger value; ``runtime_name`` is the name MSCCL's
    runtime knows the collective by ('custom' when it knows none)."""

    def __init__(self, name, num_nodes, chunks, triggers=None, runtime_name="custom"):
        self.name = name
        self.num_nodes = num_nodes
        self.num_chunks = len(chunks)
        self._chunks = list(chunks)
        self._triggers = dict(triggers or {})
        self.runtime_name = runtime_name
        addresses = [c.address for c in self._chunks]
        self.num_addresses = len(set(addresses))
        self.is_combining = self.num_addresses < len(addresses)

    def ranks(self):
        return range(self.num_nodes)

    def chunks(self):
        return range(self.num_chunks)

    def precondition(self, rank, chunk):
        return rank in self._chunks[chunk].precondition

    def postcondition(self, rank, chunk):
        return rank in self._chunks[chunk].postcondition

    def address(self, chunk):
        return self._chunks[chunk].address

    def trigger(self, rank, chunk):
        return self._triggers.get((rank, chunk))

    def has_triggers(self):
        return bool(self._triggers)

    def chunk_up(self, div):
        """The same collective with every chunk split into ``div`` (addresses split alike).
        The result is named '<name>,chunks=<div>' and, as in msccl-tools, keeps no triggers and
        no runtime name."""
        if div < 1:
            raise ValueError("chunk_up: the divisor must be at least 1 (1 leaves the collective "
                             "as it is), got %r" % (div,))
        if div == 1:
            return self
        split = [Chunk(c.precondition, c.postcondition, c.address * div + part)
                 for c in self._chunks for part in range(div)]
        return Collective("%s,chunks=%d" % (self.name, div), self.num_nodes, split)

    def __repr__(self):
        return "Collective(%r, %d ranks, %d chunks)" % (self.name, self.num_nodes,
                                                         self.num_chunks)


def build_collective(name, num_nodes, num_chunks, precondition, postcondition,
                     address=lambda c: c, trigger=lambda r, c: None, runtime_name="custom"):
    """A Collective from predicates: ``precondition(rank, chunk)`` and
    ``postcondition(rank, chunk)`` say which ranks hold a chunk, ``address(chunk)`` where it is
    reduced, ``trigger(rank, chunk)`` a trigger or None."""
    ranks = range(num_nodes)
    chunks = [Chunk({r for r in ranks if precondition(r, c)},
                    {r for r in ranks if postcondition(r, c)}, address(c))
              for c in range(num_chunks)]
    triggers = {}
    for r in ranks:
        for c in range(num_chunks):
            value = trigger(r, c)
            if value is not None:
                triggers[(r, c)] = value
    return Collective(name, num_nodes, chunks, triggers, runtime_name)


# Where chunks live: chunk c on rank (c // per_rank) mod n, on a root, or everywhere.
def _owner_of_block(num_nodes, per_rank=1):
    return lambda rank, chunk: rank == (chunk // per_rank) % num_nodes


def _row_owner(num_nodes):
    return lambda rank, chunk: rank == chunk // num_nodes


def _everywhere(rank, chunk):
    return True


def _only(root):
    return lambda rank, chunk: rank == root


def _cycled_roots(roots):
    return lambda rank, chunk: rank == roots[chunk % len(roots)]


def _reduced_per_rank(num_nodes):
    """Every rank contributes one chunk per address: chunk c is reduced at c // num_nodes."""
    return lambda chunk: chunk // num_nodes


def _roots_text(roots):
    return ",".join(str(root) for root in roots)


def broadcast(num_nodes, root):
    return build_collective("Broadcast(n=%d,root=%d)" % (num_nodes, root), num_nodes, 1,
                            _only(root), _everywhere)


def scatter(num_nodes, root):
    return build_collective("Scatter(n=%d,root=%d)" % (num_nodes, root), num_nodes, num_nodes,
                            _only(root), _owner_of_block(num_nodes))


def gather(num_nodes, root):
    return build_collective("Gather(n=%d,root=%d)" % (num_nodes, root), num_nodes, num_nodes,
                            _owner_of_block(num_nodes), _only(root))


def allgather(num_nodes):
    return build_collective("Allgather(n=%d)" % num_nodes, num_nodes, num_nodes,
                            _owner_of_block(num_nodes), _everywhere, runtime_name="allgather")


def alltoall(num_nodes):
    return build_collective("Alltoall(n=%d)" % num_nodes, num_nodes, num_nodes * num_nodes,
                            _owner_of_block(num_nodes), _row_owner(num_nodes),
                            runtime_name="alltoall")


def reduce(num_nodes, root):
    return build_collective("Reduce(n=%d,root=%d)" % (num_nodes, root), num_nodes, num_nodes,
                            _owner_of_block(num_nodes), _only(root),
                            _reduced_per_rank(num_nodes))


def allreduce(num_nodes):
    return build_collective("Allreduce(n=%d)" % num_nodes, num_nodes, num_nodes,
                            _owner_of_block(num_nodes), _everywhere,
                            _reduced_per_rank(num_nodes), runtime_name="allreduce")


def reduce_scatter(num_nodes):
    return build_collective("ReduceScatter(n=%d)" % num_nodes, num_nodes, num_nodes * num_nodes,
                            _owner_of_block(num_nodes), _row_owner(num_nodes),
                            _reduced_per_rank(num_nodes), runtime_name="reduce_scatter")


def scan(num_nodes):
    """Inclusive prefix: the chunk of rank o ends on every rank r >= o."""
    return build_collective("Scan(n=%d)" % num_nodes, num_nodes, num_nodes,
                            _owner_of_block(num_nodes),
                            lambda rank, chunk: rank >= chunk % num_nodes,
                            _reduced_per_rank(num_nodes))


def multiroot_broadcast(num_nodes, roots):
    return build_collective("MultirootBroadcast(n=%d,roots=(%s))" % (num_nodes, _roots_text(roots)),
                            num_nodes, len(roots), _cycled_roots(roots), _everywhere)


def multiroot_scatter(num_nodes, roots):
    return build_collective("MultirootScatter(n=%d,roots=(%s))" % (num_nodes, _roots_text(roots)),
                            num_nodes, num_nodes * len(roots), _cycled_roots(roots),
                            _owner_of_block(num_nodes, len(roots)))


def multiroot_gather(num_nodes, roots):
    return build_collective("MultirootGather(n=%d,roots=(%s))" % (num_nodes, _roots_text(roots)),
                            num_nodes, num_nodes * len(roots),
                            _owner_of_block(num_nodes, len(roots)), _cycled_roots(roots))
