// chorus._chorus: the one extension module of the Python package `chorus` (python/chorus/).
// Torch-free at import: the DSL, plans, runs and simulation are bound here (chorus.lang), the
// torch backend on first use (chorus.torch).
#include <pybind11/pybind11.h>

#include "chorus/error.h"
#include "errors.h"
#include "lang/bind_lang.h"
#include "torch/bind_torch.h"

namespace py = pybind11;

PYBIND11_MODULE(_chorus, module) {
  module.doc() = "chorus: programmable collective communication (native part)";
  module.attr("__version__") = CHORUS_VERSION;
  chorus::python::registerErrors(module);
  chorus::python::bindProgram(module);
  chorus::python::bindPlan(module);
  chorus::python::bindExecute(module);
  module.def(
      "_bind_torch",
      [module]() mutable {
        if (!py::hasattr(module, "ProcessGroupChorus")) chorus::torch_backend::bindTorch(module);
        return module.attr("ProcessGroupChorus");
      },
      "Binds the torch.distributed backend (imports torch) and returns ProcessGroupChorus.");
}
