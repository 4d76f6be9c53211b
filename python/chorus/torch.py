"""The torch.distributed backend ``"chorus"``.

Importing this module registers the backend; then::

    import chorus.torch
    torch.distributed.init_process_group("chorus")   # env://, tcp://, file:// or store=

runs every collective of the job on chorus's communicators (CPU tensors; PyTorch 2.x). The group
bootstraps through the store torch.distributed hands it; CHORUS_ALGO, CHORUS_ALGO_DIR,
CHORUS_TUNING_FILE, CHORUS_TIMEOUT and CHORUS_DEBUG apply as for the C++ communicator. See
docs/torch.md.
"""

import torch as _torch
import torch.distributed as _dist

from . import _chorus

#: The backend class (a ``torch._C._distributed_c10d.Backend``; torch wraps it in a
#: ``ProcessGroup``, and ``group._get_backend(torch.device("cpu"))`` returns it).
ProcessGroupChorus = _chorus._bind_torch()

BACKEND_NAME = "chorus"


def _create_backend(store, rank, world_size, timeout):
    """The backend's creator: torch.distributed calls it for every group it makes."""
    return ProcessGroupChorus(store, rank, world_size, timeout)


def last_plan(group=None):
    """(algorithm, source) of the most recent collective of ``group`` (default: WORLD).

    Waits for every call queued on the group so far.
    """
    pg = group if group is not None else _dist.distributed_c10d._get_default_group()
    backend = pg._get_backend(_torch.device("cpu"))
    if not isinstance(backend, ProcessGroupChorus):
        raise TypeError(
            f"chorus.torch.last_plan: the group runs the {pg.name()!r} backend, not 'chorus'"
        )
    return backend.last_plan()


if BACKEND_NAME.upper() not in _dist.Backend._plugins:
    _dist.Backend.register_backend(BACKEND_NAME, _create_backend, devices=["cpu"])

__all__ = ["BACKEND_NAME", "ProcessGroupChorus", "last_plan"]
