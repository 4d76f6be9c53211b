"""msccl.language.routines: ring building blocks msccl-tools' tests use."""

from .program import chunk
from .types import Buffer

__all__ = ["allgather_ring_inplace", "allreduce_ring_inplace"]


def allgather_ring_inplace(gpus, gpu_offset=0, index_offset=0, ch=0):
    """In-place AllGather (chunk factor 1) around ranks gpu_offset..+gpus: each rank's
    input travels the ring into output index index_offset + its position."""
    for position in range(gpus):
        rank = gpu_offset + position
        c = chunk(rank, Buffer.input, 0)
        for step in range(1, gpus):
            peer = gpu_offset + (position + step) % gpus
            c = c.copy(peer, Buffer.output, index_offset + position, ch=ch)


def allreduce_ring_inplace(gpus, gpu_offset=0, index_offset=0, ch=0):
    """In-place AllReduce of input chunks index_offset..+gpus around ranks
    gpu_offset..+gpus: a ring reduce-scatter, then a ring all-gather."""
    for position in range(gpus):
        index = index_offset + position
        c = chunk(gpu_offset + position, Buffer.input, index)
        for step in range(1, gpus):
            peer = gpu_offset + (position + step) % gpus
            c = chunk(peer, Buffer.input, index).reduce(c, ch=ch)
        for step in range(gpus - 1):
            peer = gpu_offset + (position + step) % gpus
            c = c.copy(peer, Buffer.input, index, ch=ch)
