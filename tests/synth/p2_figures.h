// The systems of P²'s worked examples, shared by the synthesis tests.
#pragma once

#include "synth/p2_placement.h"

namespace chorus::synth::testing_figures {

// Figure 2's system: one rack of 2 servers, 2 CPUs each, 4 GPUs per CPU (16 GPUs).
inline SystemHierarchy figure2System() {
  return {{{"rack", 1}, {"server", 2}, {"CPU", 2}, {"GPU", 4}}};
}

}  // namespace chorus::synth::testing_figures
