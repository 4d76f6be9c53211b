// chorus.lang's native part: Program, ChunkRef and collectives. Every tracing call takes the
// Python caller's "file:line" (`where`) so errors and recorded ops name the user's line.
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <pybind11/stl.h>

#include "algorithms/registry.h"
#include "bind_lang.h"
#include "chorus/lang.h"
#include "ir/collective.h"
#include "ir/table_collective.h"
#include "support/error.h"

namespace py = pybind11;

namespace chorus::python {
namespace {

using CollectivePtr = std::shared_ptr<const ir::Collective>;

// pybind11 holders cannot point to const: Python holds collectives through this handle.
struct CollectiveHandle {
  CollectivePtr collective;
  const ir::Collective& operator*() const { return *collective; }
};

// A traced program and its open parallelize() scopes (innermost last).
struct ProgramHandle {
  std::shared_ptr<lang::Program> program;
  std::vector<std::shared_ptr<lang::Program::ParallelScope>> scopes;
};

struct RefHandle {
  std::shared_ptr<lang::Program> program;  // keeps the program alive for the reference
  lang::ChunkRef ref;
};

// Names the Python caller while a tracing call runs.
class CallerLocation {
 public:
  CallerLocation(lang::Program& program, const std::string& where) : program_(program) {
    program_.setCallerLocation(where);
  }
  ~CallerLocation() { program_.setCallerLocation({}); }
  CallerLocation(const CallerLocation&) = delete;
  CallerLocation& operator=(const CallerLocation&) = delete;

 private:
  lang::Program& program_;
};

ir::Protocol protocolNamed(const std::string& name) {
  const auto protocol = ir::parseProtocolName(name);
  if (!protocol)
    throw OptionError(fmt::format("unknown protocol '{}'; use Simple, LL or LL128", name));
  return *protocol;
}

CollectiveHandle builtinCollective(const std::string& kind, int ranks, int chunkFactor,
                                   bool inPlace, int root) {
  ir::CollectiveOptions options{ranks, chunkFactor, inPlace, root};
  if (const auto parsed = ir::parseCollectiveName(kind);
      parsed && *parsed != ir::CollectiveKind::custom)
    return {ir::makeCollective(*parsed, options)};
  if (inPlace) throw OptionError(fmt::format("collective '{}' is out of place only", kind));
  if (auto custom = ir::makeCustomCollective(kind, options)) return {custom};
  throw OptionError(fmt::format(
      "unknown collective '{}'; use allreduce, allgather, reducescatter, alltoall, broadcast, "
      "reduce or a custom collective ({})",
      kind, ir::describeCustomCollectiveNames()));
}

// A value as Python gives it: a list of (rank, index) input chunks, reduced together.
ir::ChunkValue valueOf(const std::vector<std::pair<int, int>>& parts) {
  std::vector<ir::InputChunk> chunks;
  for (const auto& [rank, index] : parts)
    chunks.push_back({rank, index});
  if (chunks.empty()) return {};
  return ir::ChunkValue::sum(std::move(chunks));
}

std::vector<std::pair<int, int>> partsOf(const ir::ChunkValue& value) {
  std::vector<std::pair<int, int>> out;
  for (const ir::InputChunk& chunk : value.parts())
    out.emplace_back(chunk.rank, chunk.index);
  return out;
}

using Row = std::vector<std::optional<std::vector<std::pair<int, int>>>>;

CollectiveHandle tableCollective(const std::string& name, const std::vector<Row>& pre,
                                 const std::vector<Row>& post) {
  ir::CollectiveTable table;
  table.name = name;
  table.nranks = static_cast<int>(pre.size());
  for (const Row& row : pre) {
    auto& out = table.initial.emplace_back();
    for (const auto& value : row)
      out.push_back(value ? valueOf(*value) : ir::ChunkValue());
  }
  for (const Row& row : post) {
    auto& out = table.expected.emplace_back();
    for (const auto& value : row)
      out.push_back(value ? std::optional(valueOf(*value)) : std::nullopt);
  }
  if (ir::parseCollectiveName(name) && name != "custom")
    throw OptionError(fmt::format(
        "a custom collective cannot be named '{}', the name of a built-in collective", name));
  auto collective = ir::makeTableCollective(std::move(table));
  ir::registerTableCollective(collective);
  return {collective};
}

void bindCollective(py::module_& m) {
  using H = CollectiveHandle;
  py::class_<H>(m, "NativeCollective", "A collective's pre- and postcondition.")
      .def_property_readonly("name", [](const H& h) { return h.collective->name(); })
      .def_property_readonly("ranks", [](const H& h) { return h.collective->nranks(); })
      .def_property_readonly("chunk_factor", [](const H& h) { return h.collective->chunkFactor(); })
      .def_property_readonly("in_place", [](const H& h) { return h.collective->inPlace(); })
      .def_property_readonly("root", [](const H& h) { return h.collective->root(); })
      .def_property_readonly("has_postcondition",
                             [](const H& h) { return h.collective->hasPostcondition(); })
      .def(
          "input_chunks", [](const H& h, int rank) { return h.collective->inputChunks(rank); },
          py::arg("rank"))
      .def(
          "output_chunks", [](const H& h, int rank) { return h.collective->outputChunks(rank); },
          py::arg("rank"))
      .def(
          "initial_input",
          [](const H& h, int rank, int index) {
            return partsOf(h.collective->initialInput(rank, index));
          },
          py::arg("rank"), py::arg("index"),
          "The input chunks (rank, index) input chunk `index` starts with; [] when unused.")
      .def(
          "expected_output",
          [](const H& h, int rank, int index) -> std::optional<std::vector<std::pair<int, int>>> {
            const auto value = h.collective->expectedOutput(rank, index);
            if (!value) return std::nullopt;
            return partsOf(*value);
          },
          py::arg("rank"), py::arg("index"),
          "The input chunks output chunk `index` must end as the reduction of; None: any.");
  m.def("builtin_collective", &builtinCollective, py::arg("kind"), py::arg("ranks"),
        py::arg("chunk_factor") = 1, py::arg("in_place") = false, py::arg("root") = 0);
  m.def("table_collective", &tableCollective, py::arg("name"), py::arg("precondition"),
        py::arg("postcondition"),
        "A custom collective from per-rank tables; registered under its name for run/verify.");
}

void bindRef(py::module_& m) {
  py::class_<RefHandle>(m, "NativeRef")
      .def_property_readonly("rank", [](const RefHandle& h) { return h.ref.rank(); })
      .def_property_readonly("buffer", [](const RefHandle& h) { return h.ref.buffer(); })
      .def_property_readonly("index", [](const RefHandle& h) { return h.ref.index(); })
      .def_property_readonly("count", [](const RefHandle& h) { return h.ref.count(); })
      .def(
          "copy",
          [](const RefHandle& h, int rank, ir::BufferKind buffer, int index, int channel,
             int sendTb, int recvTb, const std::string& where) {
            CallerLocation at(*h.program, where);
            return RefHandle{h.program, h.ref.copy(rank, buffer, index, {channel, sendTb, recvTb})};
          },
          py::arg("rank"), py::arg("buffer"), py::arg("index"), py::arg("channel") = -1,
          py::arg("send_tb") = -1, py::arg("recv_tb") = -1, py::arg("where") = "")
      .def(
          "reduce",
          [](const RefHandle& h, const RefHandle& other, int channel, int sendTb, int recvTb,
             const std::string& where) {
            CallerLocation at(*h.program, where);
            return RefHandle{h.program, h.ref.reduce(other.ref, {channel, sendTb, recvTb})};
          },
          py::arg("other"), py::arg("channel") = -1, py::arg("send_tb") = -1,
          py::arg("recv_tb") = -1, py::arg("where") = "")
      .def(
          "slice",
          [](const RefHandle& h, int offset, int count, const std::string& where) {
            CallerLocation at(*h.program, where);
            return RefHandle{h.program, h.ref.slice(offset, count)};
          },
          py::arg("offset"), py::arg("count"), py::arg("where") = "");
}

void bindNativeProgram(py::module_& m) {
  py::class_<ProgramHandle>(m, "NativeProgram")
      .def(py::init([](const std::string& name, const CollectiveHandle& collective, int instances,
                       const std::string& protocol) {
             lang::ProgramOptions options;
             options.instances = instances;
             options.protocol = protocolNamed(protocol);
             return ProgramHandle{
                 std::make_shared<lang::Program>(name, collective.collective, options), {}};
           }),
           py::arg("name"), py::arg("collective"), py::arg("instances") = 1,
           py::arg("protocol") = "simple")
      .def_property_readonly("name", [](const ProgramHandle& h) { return h.program->dag().name; })
      .def_property_readonly(
          "collective",
          [](const ProgramHandle& h) { return CollectiveHandle{h.program->dag().collective}; })
      .def_property_readonly("instances",
                             [](const ProgramHandle& h) { return h.program->dag().instances; })
      .def_property_readonly("protocol",
                             [](const ProgramHandle& h) {
                               return std::string(ir::protocolName(h.program->dag().protocol));
                             })
      .def_property_readonly("op_count",
                             [](const ProgramHandle& h) { return h.program->dag().ops.size(); })
      .def(
          "chunk",
          [](ProgramHandle& h, int rank, ir::BufferKind buffer, int index, int count,
             const std::string& where) {
            CallerLocation at(*h.program, where);
            return RefHandle{h.program, h.program->chunk(rank, buffer, index, count)};
          },
          py::arg("rank"), py::arg("buffer"), py::arg("index"), py::arg("count") = 1,
          py::arg("where") = "")
      .def(
          "initialized",
          [](const ProgramHandle& h, int rank, ir::BufferKind buffer, int index) {
            return h.program->initialized(rank, buffer, index);
          },
          py::arg("rank"), py::arg("buffer"), py::arg("index"))
      .def(
          "value_at",
          [](const ProgramHandle& h, int rank, ir::BufferKind buffer, int index) {
            return partsOf(h.program->valueAt(rank, buffer, index));
          },
          py::arg("rank"), py::arg("buffer"), py::arg("index"),
          "The input chunks (rank, index) reduced into the chunk now there; [] when empty.")
      .def(
          "push_parallel",
          [](ProgramHandle& h, int factor, const std::string& where) {
            CallerLocation at(*h.program, where);
            h.scopes.push_back(std::shared_ptr<lang::Program::ParallelScope>(
                new lang::Program::ParallelScope(h.program->parallelize(factor))));
          },
          py::arg("factor"), py::arg("where") = "")
      .def("pop_parallel",
           [](ProgramHandle& h) {
             if (h.scopes.empty()) throw OptionError("pop_parallel() without push_parallel()");
             h.scopes.pop_back();
           })
      .def("check_postcondition",
           [](const ProgramHandle& h) {
             std::vector<std::string> out;
             for (const lang::Violation& v : h.program->checkPostcondition())
               out.push_back(v.describe());
             return out;
           })
      .def(
          "compile",
          [](const ProgramHandle& h, const compiler::CompileOptions& options) {
            if (!h.scopes.empty())
              throw OptionError(
                  fmt::format("'{}' is compiled inside parallelize(); close the "
                              "parallelize block first",
                              h.program->dag().name));
            // The traced postcondition first, as `chorus compile` does: it names the wrong
            // chunks, where the verifier would name steps.
            algorithms::requirePostcondition(*h.program, h.program->dag().name);
            compiler::CompileResult result = compiler::compileProgram(h.program->dag(), options);
            return PlanHandle{std::make_shared<const ir::Algorithm>(std::move(result.algorithm)),
                              std::move(result.passes)};
          },
          py::arg("options"));
}

void bindLibrary(py::module_& m) {
  m.def("algorithms", []() {
    py::list out;
    for (const algorithms::AlgorithmInfo& info : algorithms::listAlgorithms()) {
      py::list params;
      for (const algorithms::ParamInfo& p : info.params) {
        params.append(py::dict(py::arg("name") = p.name, py::arg("default") = p.defaultValue,
                               py::arg("min") = p.minValue, py::arg("max") = p.maxValue,
                               py::arg("description") = p.description,
                               py::arg("value_names") = p.valueNames));
      }
      out.append(py::dict(py::arg("name") = info.name, py::arg("collective") = info.collective,
                          py::arg("description") = info.description,
                          py::arg("citation") = info.citation,
                          py::arg("shape") = std::string(algorithms::shapeName(info.shape)),
                          py::arg("min_ranks") = info.minRanks, py::arg("params") = params,
                          py::arg("cost") = info.cost));
    }
    return out;
  });
  m.def(
      "build_algorithm",
      [](const std::string& name, int ranks, int nodes, int gpusPerNode,
         const std::map<std::string, py::object>& params, int instances,
         const std::string& protocol) {
        const algorithms::AlgorithmInfo& info = algorithms::findAlgorithm(name);
        algorithms::BuildRequest request;
        request.algorithm = info.name;
        request.ranks = ranks;
        request.nodes = nodes;
        request.gpusPerNode = gpusPerNode;
        for (const auto& [key, value] : params) {
          // A value name ("backward") or a number, as `--set` takes them.
          const std::string text = py::str(value);
          request.params.insert(algorithms::parseParamAssignment(key + "=" + text, info));
        }
        request.instances = instances;
        request.protocol = protocolNamed(protocol);
        // Its postcondition is checked when it is compiled, as for any program.
        return ProgramHandle{std::shared_ptr<lang::Program>(algorithms::buildProgram(request)), {}};
      },
      py::arg("name"), py::arg("ranks") = 0, py::arg("nodes") = 0, py::arg("gpus_per_node") = 0,
      py::arg("params") = std::map<std::string, py::object>{}, py::arg("instances") = 1,
      py::arg("protocol") = "simple",
      "Traces the library algorithm `name` (chorus algorithms) with its parameters.");
}

}  // namespace

void bindProgram(py::module_& m) {
  py::enum_<ir::BufferKind>(m, "Buffer", "A rank's buffers: input, output and scratch.")
      .value("input", ir::BufferKind::input)
      .value("output", ir::BufferKind::output)
      .value("scratch", ir::BufferKind::scratch);
  py::class_<compiler::CompileOptions>(m, "CompileOptions")
      .def(py::init<>())
      .def_readwrite("fifo_slots", &compiler::CompileOptions::fifoSlots)
      .def_readwrite("wait_cost", &compiler::CompileOptions::waitCost)
      .def_readwrite("verify", &compiler::CompileOptions::verify)
      .def_readwrite("disabled_passes", &compiler::CompileOptions::disabledPasses)
      .def_readwrite("min_bytes", &compiler::CompileOptions::minBytes)
      .def_readwrite("max_bytes", &compiler::CompileOptions::maxBytes);
  m.def("pass_names", &compiler::passNames, "The compiler's passes in pipeline order.");
  bindCollective(m);
  bindRef(m);
  bindNativeProgram(m);
  bindLibrary(m);
}

}  // namespace chorus::python
