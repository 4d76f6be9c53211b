"""msccl.language: the MSCCLang DSL of msccl-tools, traced here and compiled by chorus.

``from msccl.language import *`` gives what MSCCLang programs use: ``MSCCLProgram``,
``chunk``, ``XML``, ``Check``, ``Buffer``, ``Chunk``, ``ReduceChunk``, the policies.
"""

from .buffer import BufferSlice
from ._bridge import chorus_collective
from ._errors import MscclProgramError
from .chunk import Chunk, ReduceChunk
from .program import XML, Check, MSCCLProgram, chunk, create_scratch
from .ref import Ref
from .types import Buffer, ChannelPolicy, InstancePolicy, ReplicationPolicy, ThreadblockPolicy

__all__ = ["MSCCLProgram", "chunk", "create_scratch", "XML", "Check", "Ref", "Buffer",
           "BufferSlice", "Chunk", "ReduceChunk", "ThreadblockPolicy", "ReplicationPolicy",
           "InstancePolicy", "ChannelPolicy", "MscclProgramError", "chorus_collective"]
