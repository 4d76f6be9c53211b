// Replays the fuzz corpus (fuzz/corpus/<target>/) and every kept crash input
// (fuzz/regressions/<target>/) through the fuzz targets' checks (fuzz/fuzz_checks.h), so a fixed
// crash stays fixed in every test run (and under the sanitizers in CI). scripts/fuzz.sh runs the
// fuzzers themselves.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "../../fuzz/fuzz_checks.h"

namespace {

using Check = void (*)(const std::uint8_t*, std::size_t);

int replay(const std::string& target, Check check) {
  int inputs = 0;
  for (const char* kind : {"corpus", "regressions"}) {
    const std::filesystem::path dir =
        std::filesystem::path(CHORUS_SOURCE_DIR) / "fuzz" / kind / target;
    if (!std::filesystem::exists(dir)) continue;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      if (!entry.is_regular_file() || entry.path().filename() == ".keep") continue;
      std::ifstream in(entry.path(), std::ios::binary);
      const std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                                            std::istreambuf_iterator<char>());
      SCOPED_TRACE(entry.path().string());
      check(bytes.data(), bytes.size());
      ++inputs;
    }
  }
  return inputs;
}

TEST(FuzzRegressions, TcpFrameInputs) {
  EXPECT_GE(replay("tcp_frame", &chorus::fuzz::checkTcpFrame), 6);
}

TEST(FuzzRegressions, PlanReaderInputs) {
  EXPECT_GE(replay("plan_reader", &chorus::fuzz::checkPlanReader), 8);
}

}  // namespace
