// The torch half of the extension module: ProcessGroupChorus as a Python class.
#pragma once

#include <pybind11/pybind11.h>

namespace chorus::torch_backend {

// Defines `ProcessGroupChorus` in `module`. Imports torch.distributed first, so its Backend
// and Store types are known to pybind11; call it only when the backend is wanted.
void bindTorch(pybind11::module_& module);

}  // namespace chorus::torch_backend
