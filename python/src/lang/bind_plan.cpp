// Compiled plans for Python: their facts, the four IR formats (MSCCL XML, chorus JSON, text,
// DOT), the verifier, and plan files read back.
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <pybind11/stl.h>

#include "bind_lang.h"
#include "ir/formats.h"
#include "support/error.h"
#include "verify/verify.h"

namespace py = pybind11;

namespace chorus::python {
namespace {

std::string collectiveLabel(const ir::Algorithm& a) {
  if (a.collective == ir::CollectiveKind::custom && !a.customName.empty()) return a.customName;
  return std::string(ir::collectiveName(a.collective));
}

ir::Format formatNamed(const std::string& name) {
  const auto format = ir::parseFormatName(name);
  if (!format)
    throw OptionError(
        fmt::format("unknown format '{}'; use xml, json, text, dot or mscclpp-json", name));
  return *format;
}

std::string render(const PlanHandle& plan, const std::string& format, int maxSteps,
                   bool legacyNames) {
  ir::MscclWriteOptions xml;
  xml.maxStepsPerThreadblock = maxSteps;
  xml.legacyNames = legacyNames;
  if (maxSteps < 1)
    throw OptionError(fmt::format("max_steps must be at least 1, got {}", maxSteps));
  return ir::writeAlgorithm(*plan.algorithm, formatNamed(format), xml);
}

py::dict findingDict(const verify::Finding& f) {
  return py::dict(py::arg("kind") = std::string(verify::findingKindName(f.kind)),
                  py::arg("rank") = f.rank, py::arg("tb") = f.tb, py::arg("step") = f.step,
                  py::arg("message") = f.message);
}

}  // namespace

void bindPlan(py::module_& m) {
  py::class_<verify::VerifyReport>(m, "VerifyReport", "What the verifier found (docs/verify.md).")
      .def_property_readonly("ok", &verify::VerifyReport::ok)
      .def_property_readonly("findings",
                             [](const verify::VerifyReport& r) {
                               py::list out;
                               for (const verify::Finding& f : r.findings)
                                 out.append(findingDict(f));
                               return out;
                             })
      .def_readonly("postcondition_checked", &verify::VerifyReport::postconditionChecked)
      .def_readonly("postcondition_skipped", &verify::VerifyReport::postconditionSkipped)
      .def("__bool__", &verify::VerifyReport::ok)
      .def("__str__", &verify::VerifyReport::describe)
      .def("__repr__", [](const verify::VerifyReport& r) {
        return fmt::format("<VerifyReport {}>", r.ok() ? "ok" : "with findings");
      });

  py::class_<PlanHandle>(m, "Plan",
                         "A compiled plan (chorus's IR, compatible with MSCCL XML): write it in "
                         "a format, verify it, run it or simulate it.")
      .def_property_readonly("name", [](const PlanHandle& p) { return p.algorithm->name; })
      .def_property_readonly("collective",
                             [](const PlanHandle& p) { return collectiveLabel(*p.algorithm); })
      .def_property_readonly("ranks", [](const PlanHandle& p) { return p.algorithm->nranks; })
      .def_property_readonly("in_place", [](const PlanHandle& p) { return p.algorithm->inPlace; })
      .def_property_readonly(
          "protocol",
          [](const PlanHandle& p) { return std::string(ir::protocolName(p.algorithm->protocol)); })
      .def_property_readonly("chunks_per_loop",
                             [](const PlanHandle& p) { return p.algorithm->chunksPerLoop; })
      .def_property_readonly("channels",
                             [](const PlanHandle& p) { return ir::channelCount(*p.algorithm); })
      .def_property_readonly("threadblocks",
                             [](const PlanHandle& p) { return ir::threadblockCount(*p.algorithm); })
      .def_property_readonly("steps",
                             [](const PlanHandle& p) { return ir::stepCount(*p.algorithm); })
      .def_property_readonly(
          "passes",
          [](const PlanHandle& p) {
            std::vector<std::tuple<std::string, double, bool>> out;
            for (const compiler::PassStats& s : p.passes)
              out.emplace_back(s.name, s.milliseconds, s.skipped);
            return out;
          },
          "(pass, milliseconds, skipped) of the compile that made this plan; [] when loaded.")
      .def("to_string", &render, py::arg("format") = "xml", py::arg("max_steps") = 64,
           py::arg("legacy_names") = false,
           "The plan as MSCCL XML ('xml'), chorus JSON ('json'), text IR ('text') or DOT "
           "('dot'). XML only: max_steps is the target runtime's MSCCL_MAX_NUM_STEPS (chorus "
           "compile's --msccl-max-steps); legacy_names writes the old msccl runtime's "
           "coll=\"reduce_scatter\".")
      .def(
          "write",
          [](const PlanHandle& p, const std::string& path, const std::string& format, int maxSteps,
             bool legacyNames) {
            const std::string text = render(p, format, maxSteps, legacyNames);
            std::ofstream out(path, std::ios::binary);
            out << text;
            out.close();
            if (!out) throw OptionError(fmt::format("cannot write '{}'", path));
          },
          py::arg("path"), py::arg("format") = "xml", py::arg("max_steps") = 64,
          py::arg("legacy_names") = false)
      .def(
          "verify",
          [](const PlanHandle& p, int fifoSlots, int iterations) {
            if (fifoSlots < 1 || iterations < 1)
              throw OptionError("fifo_slots and iterations must be at least 1");
            verify::VerifyOptions options;
            options.fifoSlots = fifoSlots;
            options.iterations = iterations;
            py::gil_scoped_release release;
            return verify::verifyAlgorithm(*p.algorithm, options);
          },
          py::arg("fifo_slots") = 8, py::arg("iterations") = 2,
          "Runs chorus's verifier (postcondition, deadlock, races, input writes).")
      .def("__repr__", [](const PlanHandle& p) {
        const ir::Algorithm& a = *p.algorithm;
        return fmt::format("<chorus.Plan '{}': {} on {} ranks, {}, {} channels, {} steps>", a.name,
                           collectiveLabel(a), a.nranks, ir::protocolName(a.protocol),
                           ir::channelCount(a), ir::stepCount(a));
      });

  m.def(
      "load_plans",
      [](const std::string& path) {
        std::vector<PlanHandle> out;
        for (ir::Algorithm& a : ir::readAlgorithmsFile(path))
          out.push_back({std::make_shared<const ir::Algorithm>(std::move(a)), {}});
        return out;
      },
      py::arg("path"), "Every plan in an MSCCL XML, chorus JSON or text IR file.");
  m.def(
      "parse_plans",
      [](const std::string& text, const std::string& sourceName) {
        std::vector<PlanHandle> out;
        for (ir::Algorithm& a : ir::readAlgorithms(text, sourceName))
          out.push_back({std::make_shared<const ir::Algorithm>(std::move(a)), {}});
        return out;
      },
      py::arg("text"), py::arg("source_name") = "<string>",
      "Every plan in MSCCL XML, chorus JSON or text IR text.");
}

}  // namespace chorus::python
