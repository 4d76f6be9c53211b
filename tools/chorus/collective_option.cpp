#include "collective_option.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <memory>
#include <optional>
#include <vector>

#include "ir/collective.h"
#include "ir/group_reduction.h"
#include "support/error.h"

namespace chorus::cli {
namespace {

// A built-in collective's name ("allreduce", "reduce_scatter", ...); nullopt for anything else,
// "custom" included.
std::optional<ir::CollectiveKind> builtinNamed(const std::string& name) {
  const auto kind = ir::parseCollectiveName(name);
  if (!kind || *kind == ir::CollectiveKind::custom) return std::nullopt;
  return kind;
}

std::string describePlan(const ir::Algorithm& algorithm, const std::string& file) {
  return fmt::format("{} [{}]", file == "-" ? "<stdin>" : file, algorithm.name);
}

// The collective `algorithm` implements, as a usage error naming --collective when it cannot
// be built (a group reduction that does not partition the algorithm's ranks).
std::shared_ptr<const ir::Collective> collectiveFor(const std::string& name,
                                                    const ir::Algorithm& algorithm,
                                                    const std::string& file) {
  try {
    return ir::collectiveOf(algorithm);
  } catch (const UserError& error) {
    throw OptionError(fmt::format("--collective {} does not fit {} ({} ranks): {}", name,
                                  describePlan(algorithm, file), algorithm.nranks, error.what()));
  }
}

}  // namespace

void addCollectiveOption(CLI::App& command, std::string& name) {
  command
      .add_option("--collective", name,
                  "The collective a coll=\"custom\" plan implements, when the file does not name "
                  "it (e.g. alltonext-backward for msccl-tools' alltonext-backwards); its "
                  "postcondition then judges the plan")
      ->type_name("NAME");
}

void checkCollectiveName(const std::string& name) {
  if (name.empty() || builtinNamed(name) || name.starts_with(ir::kGroupReductionPrefix)) return;
  const std::vector<std::string> known = ir::customCollectiveNames();
  if (std::find(known.begin(), known.end(), name) != known.end()) return;
  throw OptionError(
      fmt::format("--collective '{}' is not a collective chorus knows; custom collectives: {} "
                  "(a built-in collective such as allreduce is named by the file itself)",
                  name, ir::describeCustomCollectiveNames()));
}

void applyCollectiveOption(const std::string& name, ir::Algorithm& algorithm,
                           const std::string& file) {
  if (name.empty()) return;
  const std::string plan = describePlan(algorithm, file);
  const std::optional<ir::CollectiveKind> builtin = builtinNamed(name);
  if (algorithm.collective != ir::CollectiveKind::custom) {
    if (builtin == algorithm.collective) return;
    throw OptionError(fmt::format(
        "--collective {} contradicts {}: the plan says it implements {}; drop --collective, "
        "or fix the plan's collective",
        name, plan, ir::collectiveName(algorithm.collective)));
  }
  if (builtin) {
    throw OptionError(fmt::format(
        "--collective {} contradicts {}: the plan says it implements a custom collective "
        "(coll=\"custom\"); to check it as {}, say so in the file (coll=\"{}\"); --collective "
        "names custom collectives: {}",
        name, plan, name, ir::collectiveName(*builtin), ir::describeCustomCollectiveNames()));
  }
  ir::Algorithm named = algorithm;
  named.customName = name;
  const auto wanted = collectiveFor(name, named, file);
  if (!algorithm.customName.empty()) {
    const auto given = collectiveFor(name, algorithm, file);
    if (given->name() != wanted->name())
      throw OptionError(fmt::format(
          "--collective {} contradicts {}: the plan says it implements the custom collective "
          "'{}'; drop --collective, or fix the plan's collective name (customName; MSCCL XML "
          "attribute custom=)",
          name, plan, algorithm.customName));
  }
  algorithm.customName = name;
}

}  // namespace chorus::cli
