"""Lets Debian 12's torchrun start under Python 3.11 (docs/torch.md, "torchrun on Debian 12").

torch 1.13's ``Std.from_str`` finds a redirect value by iterating the ``Std`` IntFlag. Python 3.11
no longer yields the zero flag ``NONE`` or the alias ``ALL`` when iterating, so the default
``--redirects 0`` maps to ``None`` and torchrun dies with "'NoneType' object has no attribute
'get'" before it starts a worker. This file sits in build/python, so it is Python's
``sitecustomize`` whenever ``PYTHONPATH`` holds build/python. It runs the system's own
sitecustomize, and when the process is torchrun (or ``python3 -m torch.distributed.run``)
and the bug is present, replaces ``Std.from_str`` with one that converts values directly.
Nothing else is touched.
"""

import importlib.util as _importlib_util
import os as _os
import sys as _sys
import sysconfig as _sysconfig


def _run_system_sitecustomize():
    path = _os.path.join(_sysconfig.get_paths()["stdlib"], "sitecustomize.py")
    if _os.path.realpath(path) == _os.path.realpath(__file__) or not _os.path.exists(path):
        return
    spec = _importlib_util.spec_from_file_location("_system_sitecustomize", path)
    module = _importlib_util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception:  # the system's hook is optional (e.g. apport not installed)
        pass


def _is_torchrun(argv):
    if len(argv) >= 2 and _os.path.basename(argv[1]) == "torchrun":
        return True
    return "-m" in argv and argv[argv.index("-m") + 1 :][:1] in (
        ["torch.distributed.run"],
        ["torch.distributed.launch"],
    )


def _fix_redirect_parsing():
    try:
        from torch.distributed.elastic.multiprocessing import api
    except Exception:
        return
    std = api.Std
    if std.from_str("0") is not None:
        return  # a torch or Python without the bug
    original = std.from_str.__func__

    def from_str(cls, vm):
        if vm.strip().isdigit():
            return cls(int(vm))
        result = original(cls, vm)
        if isinstance(result, dict):
            mapping = dict(part.split(":") for part in vm.split(","))
            return {int(i): cls(int(v)) for i, v in mapping.items()}
        return result

    std.from_str = classmethod(from_str)


_run_system_sitecustomize()
if _is_torchrun(getattr(_sys, "orig_argv", _sys.argv)):
    _fix_redirect_parsing()
