// Running and simulating plans from Python: chorus.run (thread ranks, numpy arrays in and out,
// every output checked as `chorus run` checks it) and chorus.simulate (a topology preset or
// file, as `chorus simulate`).
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include "bind_lang.h"
#include "ir/collective.h"
#include "ir/step_endpoints.h"
#include "runtime/collective_args.h"
#include "runtime/datatype.h"
#include "runtime/thread_runner.h"
#include "sim/simulator.h"
#include "support/error.h"
#include "support/size.h"
#include "topology/fabric.h"
#include "topology/presets.h"

namespace py = pybind11;

namespace chorus::python {
namespace {

runtime::DataType dataTypeNamed(const std::string& name) {
  const auto type = runtime::parseDataType(name);
  if (!type)
    throw OptionError(fmt::format(
        "unknown dtype '{}'; use int8, uint8, int32, uint32, int64, uint64, float16, bfloat16, "
        "float32 or float64",
        name));
  return *type;
}

// Custom collectives whose buffers are smaller than the loop buffer hold a fraction of `count`
// that the runtime does not express; run them only when every buffer is a whole loop.
void requireRunnableShape(const ir::Algorithm& plan) {
  if (plan.collective != ir::CollectiveKind::custom) return;
  const auto collective = ir::collectiveOf(plan);
  for (int r = 0; r < plan.nranks; ++r) {
    if (collective->inputChunks(r) != plan.chunksPerLoop ||
        collective->outputChunks(r) != plan.chunksPerLoop)
      throw OptionError(fmt::format(
          "'{}': rank {} has {} input and {} output chunks, but the runtime runs custom "
          "collectives whose buffers all hold nchunksperloop={} chunks; compile, verify and "
          "simulate it, or give every buffer that size",
          plan.name, r, collective->inputChunks(r), collective->outputChunks(r),
          plan.chunksPerLoop));
  }
}

py::dict runPlan(const PlanHandle& plan, std::size_t count, const std::string& dtype,
                 const std::string& op, int iterations, double timeoutSeconds,
                 const std::vector<py::array>& inputs, double tolerance) {
  const ir::Algorithm& a = *plan.algorithm;
  requireRunnableShape(a);
  runtime::RunOptions options;
  options.type = dataTypeNamed(dtype);
  const auto reduceOp = runtime::parseReduceOp(op);
  if (!reduceOp)
    throw OptionError(fmt::format("unknown op '{}'; use sum, prod, min, max or avg", op));
  options.op = *reduceOp;
  if (iterations < 1) throw OptionError("iterations must be at least 1");
  if (timeoutSeconds <= 0) throw OptionError("timeout must be positive");
  options.iterations = iterations;
  options.timeout = std::chrono::milliseconds(static_cast<long>(timeoutSeconds * 1000));
  options.count = count;
  const std::size_t esz = runtime::dataTypeSize(options.type);
  if (!inputs.empty()) {
    if (static_cast<int>(inputs.size()) != a.nranks)
      throw OptionError(fmt::format("'{}' runs on {} ranks but {} input arrays were given", a.name,
                                    a.nranks, inputs.size()));
    for (int r = 0; r < a.nranks; ++r) {
      const py::array& in = inputs[r];
      const std::size_t want = runtime::inputElements(a, r, count);
      if (static_cast<std::size_t>(in.size()) != want ||
          static_cast<std::size_t>(in.itemsize()) != esz || !(in.flags() & py::array::c_style))
        throw OptionError(fmt::format(
            "rank {}'s input has {} elements of {} bytes; '{}' with count {} needs a contiguous "
            "array of {} {} elements",
            r, in.size(), in.itemsize(), a.name, count, want, dtype));
      options.givenInputs.push_back(in.data());
    }
    options.relativeTolerance = tolerance;
  }
  std::vector<std::vector<std::uint8_t>> outputs;
  runtime::RunReport report;
  {
    py::gil_scoped_release release;
    report = runtime::runOnThreads(a, options, &outputs);
  }
  py::list outArrays;
  for (const auto& bytes : outputs) {
    py::array_t<std::uint8_t> raw(static_cast<py::ssize_t>(bytes.size()));
    if (!bytes.empty()) std::memcpy(raw.mutable_data(), bytes.data(), bytes.size());
    outArrays.append(raw);
  }
  return py::dict(py::arg("ok") = report.ok(), py::arg("checked") = report.checkedElements,
                  py::arg("wrong") = report.wrongElements,
                  py::arg("first_wrong") = report.firstWrong, py::arg("seconds") = report.seconds,
                  py::arg("count") = count, py::arg("outputs") = outArrays,
                  py::arg("postcondition_known") = ir::collectiveOf(a)->hasPostcondition());
}

std::size_t countForBytes(const PlanHandle& plan, const std::string& bytes,
                          const std::string& dtype) {
  return runtime::countForBytes(*plan.algorithm, parseSize(bytes),
                                runtime::dataTypeSize(dataTypeNamed(dtype)));
}

py::dict simulatePlan(const PlanHandle& plan, const std::string& topologyName, int nodes,
                      const std::string& bytes, int slots, const std::string& slotBytes,
                      bool tiling) {
  ir::requireStepEndpoints(*plan.algorithm, "simulated");  // plans loaded from files
  const topology::Topology topology = topology::loadTopology(topologyName, nodes);
  topology::Fabric fabric(topology);
  sim::SimOptions options;
  options.bytes = parseSize(bytes);
  if (slots < 1) throw OptionError(fmt::format("slots {} must be at least 1", slots));
  options.slots = slots;
  if (!slotBytes.empty()) options.slotBytes = parseSize(slotBytes);
  if (options.slotBytes == 0) throw OptionError("slot_bytes must be at least 1");
  options.tiling = tiling;
  sim::SimResult r;
  {
    py::gil_scoped_release release;
    r = sim::simulate(*plan.algorithm, fabric, options);
  }
  py::list links;
  for (const sim::LinkUse& link : r.links)
    links.append(py::dict(py::arg("name") = link.name, py::arg("bytes") = link.bytes,
                          py::arg("busy") = link.busy, py::arg("utilization") = link.utilization));
  return py::dict(py::arg("topology") = topology.name, py::arg("nodes") = topology.nodes,
                  py::arg("bytes") = r.bytes, py::arg("seconds") = r.seconds,
                  py::arg("algbw") = r.algbw, py::arg("busbw") = r.busbw,
                  py::arg("tiles") = r.tiles, py::arg("events") = r.events,
                  py::arg("links") = links);
}

}  // namespace

void bindExecute(py::module_& m) {
  m.def("run_plan", &runPlan, py::arg("plan"), py::arg("count"), py::arg("dtype"), py::arg("op"),
        py::arg("iterations"), py::arg("timeout"), py::arg("inputs"), py::arg("tolerance"));
  m.def("count_for_bytes", &countForBytes, py::arg("plan"), py::arg("bytes"), py::arg("dtype"));
  m.def(
      "input_elements",
      [](const PlanHandle& plan, int rank, std::size_t count) {
        return runtime::inputElements(*plan.algorithm, rank, count);
      },
      py::arg("plan"), py::arg("rank"), py::arg("count"));
  m.def(
      "output_elements",
      [](const PlanHandle& plan, int rank, std::size_t count) {
        return runtime::outputElements(*plan.algorithm, rank, count);
      },
      py::arg("plan"), py::arg("rank"), py::arg("count"));
  m.def("simulate_plan", &simulatePlan, py::arg("plan"), py::arg("topology"), py::arg("nodes"),
        py::arg("bytes"), py::arg("slots"), py::arg("slot_bytes"), py::arg("tiling"));
  m.def(
      "parse_size", [](const std::string& text) { return parseSize(text); }, py::arg("text"),
      "'64K', '1M', '1G', '512' -> bytes, as the CLI reads sizes.");
  m.def("topology_presets", []() {
    py::list out;
    for (const topology::PresetInfo& p : topology::presets())
      out.append(py::dict(py::arg("name") = p.name, py::arg("summary") = p.summary,
                          py::arg("devices") = p.devices));
    return out;
  });
}

}  // namespace chorus::python
