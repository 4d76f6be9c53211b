"""chorus: programmable collective communication.

The native part is the extension module ``chorus._chorus``. Submodules:

- ``chorus.lang``: the DSL in Python: programs, chunk references, collectives (built-in and
  custom), compiling to plans, the algorithm library (docs/python.md).
- ``chorus.torch``: importing it registers the torch.distributed backend ``"chorus"``
  (docs/torch.md).

Plans are run, simulated and loaded with ``chorus.run``, ``chorus.simulate`` and
``chorus.load``. Errors are ``chorus.Error`` and its subclasses (``ProgramError``,
``CompileError``, ``OptionError``, ...).
"""

from . import _chorus
from ._chorus import (CommError, CompileError, Error, FormatLimitError, OptionError, ParseError,
                      Plan, PlanError, ProgramError, SimulationError, TimeoutError, VerifyReport)
from .execute import (RunResult, SimResult, WrongResultError, input_elements, load,
                      output_elements, parse, parse_size, run, simulate, topologies)

__version__ = _chorus.__version__

__all__ = [
    "__version__", "Error", "ProgramError", "CompileError", "OptionError", "ParseError",
    "FormatLimitError", "TimeoutError", "CommError", "SimulationError", "PlanError",
    "WrongResultError",
    "Plan", "VerifyReport", "RunResult", "SimResult", "run", "simulate", "load", "parse",
    "parse_size", "topologies", "input_elements", "output_elements",
]
