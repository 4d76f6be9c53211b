#include "errors.h"

#include "chorus/error.h"

namespace py = pybind11;

namespace chorus::python {

void registerErrors(py::module_& module) {
  // pybind11 tries the most recently registered translator first: the base goes first.
  auto base = py::register_exception<UserError>(module, "Error", PyExc_Exception);
  py::register_exception<ProgramError>(module, "ProgramError", base.ptr());
  py::register_exception<ParseError>(module, "ParseError", base.ptr());
  py::register_exception<FormatLimitError>(module, "FormatLimitError", base.ptr());
  py::register_exception<OptionError>(module, "OptionError", base.ptr());
  py::register_exception<CompileError>(module, "CompileError", base.ptr());
  py::register_exception<TimeoutError>(module, "TimeoutError", base.ptr());
  py::register_exception<CommError>(module, "CommError", base.ptr());
  py::register_exception<SimulationError>(module, "SimulationError", base.ptr());
  py::register_exception<PlanError>(module, "PlanError", base.ptr());
}

}  // namespace chorus::python
