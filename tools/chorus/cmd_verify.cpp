// `chorus verify FILE...`: reads algorithms (MSCCL XML, chorus JSON or text, MSCCL++ execution
// plans; '-' = stdin), verifies each one and prints "FILE [name]: ok ..." or every finding. Exit 0
// iff all are valid, 1 if any finding (or, with --strict, a postcondition left unchecked because
// the custom collective is unknown), 2 if any file could not be read or parsed or --collective is
// unknown or contradicts a file.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <memory>
#include <string>
#include <vector>

#include "cli.h"
#include "collective_option.h"
#include "ir/formats.h"
#include "support/error.h"
#include "verify/verify.h"

namespace chorus::cli {
namespace {

struct VerifyArgs {
  std::vector<std::string> files;
  int fifoSlots = 8;
  int iterations = 2;
  std::string collective;  // --collective: the custom collective the files implement
  bool strict = false;     // an unchecked postcondition fails
};

std::string displayName(const std::string& file) {
  return file == "-" ? "<stdin>" : file;
}

ExitCode runVerify(const VerifyArgs& args) {
  if (args.fifoSlots < 1) {
    throw OptionError(fmt::format("--fifo-slots {} must be at least 1", args.fifoSlots));
  }
  if (args.iterations < 1) {
    throw OptionError(fmt::format("--iterations {} must be at least 1", args.iterations));
  }
  verify::VerifyOptions options;
  options.fifoSlots = args.fifoSlots;
  options.iterations = args.iterations;
  checkCollectiveName(args.collective);

  bool anyFinding = false;
  bool anyUnreadable = false;
  for (const std::string& file : args.files) {
    std::vector<ir::Algorithm> algorithms;
    try {
      algorithms = ir::readAlgorithmsFile(file);
    } catch (const UserError& error) {
      // Keep going so every file gets a verdict. Readers name the file and element already.
      const std::string message = error.what();
      const std::string name = displayName(file);
      printError(message.find(name) != std::string::npos || message.find(file) != std::string::npos
                     ? message
                     : fmt::format("{}: {}", name, message));
      anyUnreadable = true;
      continue;
    }
    if (algorithms.empty()) {
      printError(fmt::format("{}: no algorithm found", displayName(file)));
      anyUnreadable = true;
      continue;
    }
    for (ir::Algorithm& algorithm : algorithms)
      applyCollectiveOption(args.collective, algorithm, file);
    for (const ir::Algorithm& algorithm : algorithms) {
      const verify::VerifyReport report = verify::verifyAlgorithm(algorithm, options);
      const std::string prefix = fmt::format("{} [{}]", displayName(file), algorithm.name);
      if (report.ok() && args.strict && !report.postconditionChecked) {
        anyFinding = true;
        fmt::print("{}: {} (--strict: fails)\n", prefix, report.describe());
        continue;
      }
      if (report.ok()) {
        fmt::print("{}: {}\n", prefix, report.describe());
        continue;
      }
      anyFinding = true;
      fmt::print("{}: {} finding(s)\n", prefix, report.findings.size());
      for (const verify::Finding& finding : report.findings) {
        fmt::print("{}: {}: {}\n", prefix, verify::findingKindName(finding.kind), finding.message);
      }
    }
  }
  std::fflush(stdout);
  if (anyUnreadable) return ExitCode::usage;
  return anyFinding ? ExitCode::failure : ExitCode::ok;
}

}  // namespace

Command addVerifyCommand(CLI::App& app) {
  CLI::App* command = app.add_subcommand(
      "verify", "Verify algorithm files: postcondition, deadlock freedom, races, structure");
  auto args = std::make_shared<VerifyArgs>();
  command
      ->add_option("files", args->files,
                   "Algorithm files (MSCCL XML, chorus JSON, text or MSCCL++ plan JSON); '-' = "
                   "standard input")
      ->required();
  command->add_option("--fifo-slots", args->fifoSlots, "Slots per connection FIFO")
      ->capture_default_str();
  command->add_option("--iterations", args->iterations, "Tiles simulated back to back")
      ->capture_default_str();
  addCollectiveOption(*command, args->collective);
  command->add_flag("--strict", args->strict,
                    "Fail (exit 1) when a postcondition is not checked because chorus does not "
                    "know the custom collective (name it with --collective)");
  return [args]() { return runVerify(*args); };
}

}  // namespace chorus::cli
