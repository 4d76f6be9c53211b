#include "selection/plan_files.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <system_error>

#include "ir/formats.h"
#include "selection/algo_overrides.h"
#include "support/error.h"
#include "support/size.h"
#include "verify/fifo_depth.h"
#include "verify/verify.h"

namespace chorus::selection {
namespace {

constexpr std::size_t kListedFindings = 5;

bool isPlanFileName(const std::filesystem::path& path) {
  const std::string extension = path.extension().string();
  return extension == ".xml" || extension == ".json" || extension == ".txt";
}

bool onlyDeadlocks(const verify::VerifyReport& report) {
  return std::all_of(report.findings.begin(), report.findings.end(), [](const auto& finding) {
    return finding.kind == verify::FindingKind::deadlock;
  });
}

// Verified at the communicator's FIFO depth: a plan that deadlocks only at that depth is named
// with the depth it needs.
void requireValid(const std::string& path, const ir::Algorithm& algorithm, int fifoSlots) {
  verify::VerifyOptions options;
  options.fifoSlots = fifoSlots;
  const verify::VerifyReport report = verify::verifyAlgorithm(algorithm, options);
  if (report.ok()) return;
  std::optional<int> needed;
  if (onlyDeadlocks(report)) needed = verify::minimumFifoSlots(algorithm);
  std::string message =
      needed && *needed > fifoSlots
          ? fmt::format(
                "{} [{}] can deadlock with {} FIFO slot(s) per connection, the depth this "
                "communicator runs at; the smallest depth that works for it is {}: set "
                "CHORUS_SLOTS={} or more (CommConfig.slots in code), or use a plan compiled for "
                "{} slot(s) ('chorus compile ... --fifo-slots {}'):",
                path, algorithm.name, fifoSlots, *needed, *needed, fifoSlots, fifoSlots)
          : fmt::format(
                "{} [{}] is not a valid {} plan ({} finding(s) at {} FIFO slots per connection); "
                "fix or remove the file, or run 'chorus verify --fifo-slots {} {}' for details:",
                path, algorithm.name, ir::collectiveName(algorithm.collective),
                report.findings.size(), fifoSlots, fifoSlots, path);
  for (std::size_t i = 0; i < report.findings.size() && i < kListedFindings; ++i)
    message += fmt::format("\n  {}: {}", verify::findingKindName(report.findings[i].kind),
                           report.findings[i].message);
  throw OptionError(message);
}

}  // namespace

std::string FilePlan::displayName() const {
  return fmt::format("{} [{}]", std::filesystem::path(file).filename().string(), algorithm->name);
}

std::vector<FilePlan> readPlanFile(const std::string& path, int fifoSlots) {
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error)) {
    throw OptionError(fmt::format("plan file '{}' does not exist or is not a regular file", path));
  }
  std::vector<ir::Algorithm> algorithms;
  try {
    algorithms = ir::readAlgorithmsFile(path);
  } catch (const UserError& parseError) {
    const std::string message = parseError.what();
    throw OptionError(
        message.find(path) != std::string::npos ? message : fmt::format("{}: {}", path, message));
  }
  if (algorithms.empty()) throw OptionError(fmt::format("{}: no algorithm found", path));
  std::vector<FilePlan> plans;
  for (ir::Algorithm& algorithm : algorithms) {
    requireValid(path, algorithm, fifoSlots);
    plans.push_back({path, std::make_shared<const ir::Algorithm>(std::move(algorithm))});
  }
  return plans;
}

std::vector<FilePlan> readPlanDirectory(const std::string& directory, int fifoSlots) {
  std::error_code error;
  if (!std::filesystem::is_directory(directory, error)) {
    throw OptionError(
        fmt::format("CHORUS_ALGO_DIR '{}' is not a directory; point it at a directory of .xml, "
                    ".json or .txt plans, or unset it",
                    directory));
  }
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(directory, error)) {
    if (entry.is_regular_file() && isPlanFileName(entry.path())) files.push_back(entry.path());
  }
  if (error) {
    throw OptionError(
        fmt::format("CHORUS_ALGO_DIR '{}' cannot be listed: {}", directory, error.message()));
  }
  std::sort(files.begin(), files.end());
  std::vector<FilePlan> plans;
  for (const auto& file : files) {
    try {
      for (FilePlan& plan : readPlanFile(file.string(), fifoSlots))
        plans.push_back(std::move(plan));
    } catch (const OptionError& bad) {
      throw OptionError(fmt::format("CHORUS_ALGO_DIR: {}", bad.what()));
    }
  }
  return plans;
}

std::string planMismatch(const ir::Algorithm& algorithm, const runtime::PlanRequest& request,
                         const MatchOptions& options) {
  if (algorithm.collective != request.collective) {
    return fmt::format("plan for {}", algorithm.collective == ir::CollectiveKind::custom
                                          ? algorithm.customName
                                          : std::string(ir::collectiveName(algorithm.collective)));
  }
  if (algorithm.nranks != request.nranks) return fmt::format("{} ranks", algorithm.nranks);
  const bool rooted = request.collective == ir::CollectiveKind::broadcast ||
                      request.collective == ir::CollectiveKind::reduce;
  if (rooted && algorithm.root != request.root) return fmt::format("root {}", algorithm.root);
  if (options.checkInPlace && algorithm.inPlace != request.inPlace)
    return algorithm.inPlace ? "in-place" : "out-of-place";
  if (options.checkBytes) {
    const SizeRange range{algorithm.minBytes,
                          algorithm.maxBytes == 0 ? kUnlimitedBytes : algorithm.maxBytes};
    if (!range.contains(request.bytes)) return fmt::format("sizes {}", range.describe());
  }
  return "";
}

}  // namespace chorus::selection
