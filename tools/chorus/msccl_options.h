// The option of the commands that write MSCCL XML (`compile --format xml`, `synth trees
// --emit`, `synth reduction --emit`): --msccl-max-steps, the target runtime's
// MSCCL_MAX_NUM_STEPS, into ir::MscclWriteOptions.
#pragma once

#include "ir/msccl_xml.h"

namespace CLI {
class App;
}

namespace chorus::cli {

// Adds --msccl-max-steps N to `command`, storing into options.maxStepsPerThreadblock (which
// must outlive parsing; its value is the default shown). N must be at least 1.
void addMscclWriteOptions(CLI::App& command, ir::MscclWriteOptions& options);

}  // namespace chorus::cli
