// The DSL and the tools around it for Python (chorus.lang, docs/python.md): programs and chunk
// references, built-in and table-defined custom collectives, compiled plans with their formats
// and the verifier, and the thread runner, simulator and algorithm library.
#pragma once

#include <memory>
#include <vector>

#include <pybind11/pybind11.h>

#include "compiler/pipeline.h"
#include "ir/algorithm.h"

namespace chorus::python {

// A compiled or loaded plan as Python sees it: immutable, shared.
struct PlanHandle {
  std::shared_ptr<const ir::Algorithm> algorithm;
  std::vector<compiler::PassStats> passes;  // empty for loaded plans
};

void bindProgram(pybind11::module_& module);  // bind_program.cpp
void bindPlan(pybind11::module_& module);     // bind_plan.cpp
void bindExecute(pybind11::module_& module);  // bind_execute.cpp

}  // namespace chorus::python
