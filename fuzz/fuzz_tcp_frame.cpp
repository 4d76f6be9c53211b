// libFuzzer target: the TCP transport's frame header decoder (fuzz_checks.h).
#include "fuzz_checks.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  chorus::fuzz::checkTcpFrame(data, size);
  return 0;
}
