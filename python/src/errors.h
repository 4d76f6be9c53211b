// chorus's typed errors as Python exceptions: chorus.Error (UserError) and one subclass per
// chorus error type (ProgramError, CompileError, OptionError, ...), so a Python caller can catch
// exactly what went wrong.
#pragma once

#include <pybind11/pybind11.h>

namespace chorus::python {

void registerErrors(pybind11::module_& module);

}  // namespace chorus::python
