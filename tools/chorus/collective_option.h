// `--collective NAME` of `chorus verify`, `run` and `bench`: names the collective a plan file
// implements when the file does not (a coll="custom" MSCCL XML program), so the verifier and the
// runtime's result check judge it by that definition.
#pragma once

#include <string>

#include "ir/algorithm.h"

namespace CLI {
class App;
}

namespace chorus::cli {

// Adds --collective NAME to `command`, storing into `name` (which must outlive parsing).
void addCollectiveOption(CLI::App& command, std::string& name);

// Throws OptionError unless `name` is a collective chorus knows: a registered custom collective
// (ir::customCollectiveNames()), a group reduction "group-reduction:...", or a built-in
// collective's name. The message lists the known custom collectives.
void checkCollectiveName(const std::string& name);

// Applies --collective `name` (checked with checkCollectiveName; "" = not given) to
// `algorithm`, read from `file`: a custom algorithm gets customName = name. Throws OptionError
// naming both when the file already says otherwise: a built-in collective other than `name`, a
// custom collective named differently (aliases of one collective agree), or a custom algorithm
// given a built-in name; also when a group reduction does not fit the algorithm's ranks.
void applyCollectiveOption(const std::string& name, ir::Algorithm& algorithm,
                           const std::string& file);

}  // namespace chorus::cli
