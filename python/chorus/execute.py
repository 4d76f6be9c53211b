"""Running, simulating and loading plans: ``chorus.run``, ``chorus.simulate``, ``chorus.load``.

``run`` executes a plan on thread ranks of this process (the runtime's interpreter over the
thread transport, as ``chorus run --transport thread``) and checks every output element against
the collective's definition. ``simulate`` predicts its time on a topology preset or file with
the event-driven simulator (``chorus simulate``). docs/python.md has examples.
"""

from . import _chorus
from ._chorus import Error

__all__ = ["run", "simulate", "load", "parse", "RunResult", "SimResult", "WrongResultError",
           "parse_size", "topologies"]

_NUMPY_DTYPES = {
    "int8": "int8", "uint8": "uint8", "int32": "int32", "uint32": "uint32", "int64": "int64",
    "uint64": "uint64", "float16": "float16", "float32": "float32", "float64": "float64",
    # numpy has no bfloat16: its arrays carry the bit patterns as uint16.
    "bfloat16": "uint16",
}
_DTYPE_ALIASES = {"f16": "float16", "half": "float16", "bf16": "bfloat16", "float": "float32",
                  "double": "float64", "f32": "float32", "f64": "float64"}
# Floating outputs of caller-given inputs may reduce in another order than the check does.
_TOLERANCE = {"float16": 1e-2, "bfloat16": 2e-2, "float32": 1e-5, "float64": 1e-12}


class WrongResultError(Error):
    """A run's outputs differ from the collective's definition (or its input changed)."""


def parse_size(text):
    """'64K', '1M', '1G', '512' -> bytes, as the CLI reads sizes."""
    return _chorus.parse_size(str(text))


def _dtype_name(dtype):
    name = str(dtype)
    name = _DTYPE_ALIASES.get(name, name)
    if name not in _NUMPY_DTYPES:
        raise _chorus.OptionError("unknown dtype '%s'; use one of %s"
                                  % (dtype, ", ".join(sorted(_NUMPY_DTYPES))))
    return name


class RunResult:
    """What ``chorus.run`` did: ``ok``, ``checked`` and ``wrong`` element counts, the first
    wrong element (``first_wrong``), ``seconds`` of the last iteration, the ``count`` used and
    every rank's ``inputs`` and ``outputs`` as numpy arrays."""

    def __init__(self, plan, raw, dtype, inputs):
        self.plan = plan
        self.ok = raw["ok"]
        self.checked = raw["checked"]
        self.wrong = raw["wrong"]
        self.first_wrong = raw["first_wrong"]
        self.seconds = raw["seconds"]
        self.count = raw["count"]
        self.dtype = dtype
        self.postcondition_known = raw["postcondition_known"]
        self.inputs = inputs
        self.outputs = [array.view(_NUMPY_DTYPES[dtype]) for array in raw["outputs"]]

    def __bool__(self):
        return self.ok

    def __repr__(self):
        if not self.postcondition_known:
            state = "ran, NOT checked (unknown custom collective)"
        elif self.ok:
            state = "correct (%d elements checked)" % self.checked
        else:
            state = "WRONG: %d of %d elements differ; first: %s" % (self.wrong, self.checked,
                                                                    self.first_wrong)
        return "<chorus.RunResult '%s' count %d %s: %s, %.3f ms>" % (
            self.plan.name, self.count, self.dtype, state, self.seconds * 1e3)


def run(plan, ranks=None, count=None, bytes=None, dtype=None, op="sum", inputs=None,
        iterations=1, timeout=300.0, tolerance=None, check=True):
    """Runs ``plan`` on thread ranks and checks every output element, as ``chorus run`` does.

    - ``inputs``: one numpy array per rank (``input_elements(plan, rank, count)`` elements);
      omitted, each rank gets chorus's exact small-integer inputs, so every reduction order
      gives identical bits and the check is exact. Given inputs are checked exactly for
      integer types and within ``tolerance`` (relative) for floating ones.
    - ``count`` (NCCL's count) or ``bytes`` (the largest buffer per rank, default 1M); with
      ``inputs``, the count follows from their length.
    - ``dtype``: int8 ... float64, bfloat16 (numpy arrays of uint16 bit patterns); default
      the inputs' type, else float32. ``op``: sum, prod, min, max or avg.
    - ``ranks``: if given, must be the plan's rank count.

    Returns a ``RunResult``; with ``check`` (default) a wrong result raises
    ``WrongResultError`` naming the first wrong element.
    """
    import numpy

    if ranks is not None and ranks != plan.ranks:
        raise _chorus.OptionError("'%s' is a plan for %d ranks, not ranks=%d"
                                  % (plan.name, plan.ranks, ranks))
    arrays = []
    if inputs is not None:
        inputs = list(inputs)
        if dtype is None and inputs:
            dtype = str(numpy.asarray(inputs[0]).dtype)
        dtype = _dtype_name(dtype)
        arrays = [numpy.ascontiguousarray(a, dtype=_NUMPY_DTYPES[dtype]).reshape(-1)
                  for a in inputs]
        if count is None:
            per = _chorus.input_elements(plan, 0, 1)
            total = arrays[0].size if arrays else 0
            if per == 0 or total % per != 0:
                raise _chorus.OptionError(
                    "rank 0's input has %d elements, not a multiple of the %d elements per "
                    "count of '%s'; pass count=" % (total, per, plan.name))
            count = total // per
    else:
        dtype = _dtype_name(dtype or "float32")
        if count is None:
            count = _chorus.count_for_bytes(plan, str(bytes or "1M"), dtype)
    if count < 1:
        raise _chorus.OptionError("count must be at least 1, got %d (raise bytes=)" % count)
    if tolerance is None:
        tolerance = _TOLERANCE.get(dtype, 0.0)
    raw = _chorus.run_plan(plan, int(count), dtype, str(op), int(iterations), float(timeout),
                           arrays, float(tolerance))
    result = RunResult(plan, raw, dtype, arrays)
    if check and not result.ok:
        raise WrongResultError("'%s' on %d ranks (count %d %s %s): %d of %d elements differ; "
                               "first: %s" % (plan.name, plan.ranks, result.count, dtype, op,
                                              result.wrong, result.checked, result.first_wrong))
    return result


def input_elements(plan, rank, count):
    """Elements of ``rank``'s input buffer for ``count``."""
    return _chorus.input_elements(plan, rank, count)


def output_elements(plan, rank, count):
    """Elements of ``rank``'s output buffer for ``count``."""
    return _chorus.output_elements(plan, rank, count)


class SimResult(dict):
    """A prediction: ``seconds``, ``algbw`` and ``busbw`` (bytes/s, nccl-tests' conventions),
    ``tiles``, ``events`` and ``links`` (busiest first: name, bytes, busy, utilization). Also a
    dict of those keys."""

    __getattr__ = dict.__getitem__

    def __repr__(self):
        return "<chorus.SimResult %s bytes on %s x%d: %.2f us, busbw %.2f GB/s>" % (
            self["bytes"], self["topology"], self["nodes"], self["seconds"] * 1e6,
            self["busbw"] / 1e9)


def simulate(plan, topology="dgx-a100", nodes=None, bytes="1M", slots=8, slot_bytes="256K",
             tiling=True):
    """Predicts ``plan``'s time with the event-driven simulator on a topology preset
    (``topologies()``: dgx1, dgx-a100, dgx-h100, summit, ...) or a topology JSON file with
    ``nodes`` nodes (default: enough for the plan's ranks, at least 1)."""
    if nodes is None:
        devices = {p["name"]: p["devices"] for p in _chorus.topology_presets()}.get(
            str(topology), 0)
        nodes = max(1, -(-plan.ranks // devices)) if devices else 0
    return SimResult(_chorus.simulate_plan(plan, str(topology), int(nodes), str(bytes),
                                           int(slots), str(slot_bytes), bool(tiling)))


def topologies():
    """The topology presets: dicts with name, summary and devices per node."""
    return _chorus.topology_presets()


def load(path):
    """Every plan in an MSCCL XML, chorus JSON or text IR file."""
    return _chorus.load_plans(str(path))


def parse(text, source_name="<string>"):
    """Every plan in MSCCL XML, chorus JSON or text IR given as a string."""
    return _chorus.parse_plans(text, source_name)
