// ProcessGroupChorus for Python (a torch._C._distributed_c10d.Backend): the constructor that
// torch.distributed's backend creator calls (python/chorus/torch.py) and the group's
// chorus-specific queries.
#include "torch/bind_torch.h"

#include <pybind11/chrono.h>
#include <pybind11/stl.h>
#include <torch/csrc/utils/pybind.h>

#include "torch/process_group.h"

namespace py = pybind11;

namespace chorus::torch_backend {

void bindTorch(py::module_& module) {
  py::module_::import("torch.distributed");
  py::class_<ProcessGroupChorus, c10d::Backend, c10::intrusive_ptr<ProcessGroupChorus>>(
      module, "ProcessGroupChorus",
      "torch.distributed backend over a chorus communicator (docs/torch.md)")
      // The GIL is released only while the group connects: pybind11 registers the new instance
      // after the factory returns, and must hold the GIL for that.
      .def(py::init([](const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                       std::chrono::milliseconds timeout) {
             py::gil_scoped_release release;
             return c10::make_intrusive<ProcessGroupChorus>(store, rank, size, timeout);
           }),
           py::arg("store"), py::arg("rank"), py::arg("size"), py::arg("timeout"),
           "Joins the group's communicator through `store` (collective over the group).")
      .def(
          "last_plan",
          [](ProcessGroupChorus& group) {
            PlanInfo plan;
            {
              py::gil_scoped_release release;  // waits for the group's queued calls
              plan = group.lastPlan();
            }
            return py::make_tuple(plan.algorithm, plan.source);
          },
          "(algorithm, source) of the most recent collective, after every queued call ran.");
}

}  // namespace chorus::torch_backend
