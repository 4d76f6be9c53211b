// libFuzzer target: the plan readers and the collective lookup (fuzz_checks.h).
#include "fuzz_checks.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  chorus::fuzz::checkPlanReader(data, size);
  return 0;
}
