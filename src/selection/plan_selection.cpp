#include "selection/plan_selection.h"

#include "selection/plan_selector.h"
#include "support/env.h"

namespace chorus::selection {

SelectionConfig selectionConfigFromEnvironment(int nranks) {
  SelectionConfig config;
  config.nranks = nranks;
  config.algo = envString("CHORUS_ALGO").value_or("");
  config.algoDir = envString("CHORUS_ALGO_DIR").value_or("");
  config.tuningFile = envString("CHORUS_TUNING_FILE").value_or("");
  return config;
}

std::shared_ptr<runtime::PlanProvider> makePlanProvider(const SelectionConfig& config) {
  return std::make_shared<PlanSelector>(config);
}

}  // namespace chorus::selection
