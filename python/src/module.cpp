// chorus._chorus: the one extension module of the Python package `chorus` (python/chorus/).
// Torch-free at import; the torch backend is bound on first use (chorus.torch).
#include <pybind11/pybind11.h>

#include "chorus/error.h"
#include "torch/bind_torch.h"

namespace py = pybind11;

PYBIND11_MODULE(_chorus, module) {
  module.doc() = "chorus: programmable collective communication (native part)";
  module.attr("__version__") = CHORUS_VERSION;
  module.def(
      "_bind_torch",
      [module]() mutable {
        if (!py::hasattr(module, "ProcessGroupChorus")) chorus::torch_backend::bindTorch(module);
        return module.attr("ProcessGroupChorus");
      },
      "Binds the torch.distributed backend (imports torch) and returns ProcessGroupChorus.");
}
