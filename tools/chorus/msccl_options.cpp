#include "msccl_options.h"

#include <CLI/CLI.hpp>

#include <limits>

namespace chorus::cli {

void addMscclWriteOptions(CLI::App& command, ir::MscclWriteOptions& options) {
  command
      .add_option("--msccl-max-steps", options.maxStepsPerThreadblock,
                  "MSCCL XML: most steps per threadblock (nops included), the MSCCL_MAX_NUM_STEPS "
                  "the target MSCCL was built with (executor default 64; the older msccl "
                  "runtime 256)")
      ->type_name("N")
      ->check(CLI::Range(1, std::numeric_limits<int>::max()))
      ->capture_default_str();
}

}  // namespace chorus::cli
