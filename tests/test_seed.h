// The seed of every randomized test (CONTRIBUTING.md "Tests"): one variable, CHORUS_TEST_SEED, for
// all test binaries. A test that draws random inputs seeds its generator with testSeed(); the
// test prints the seed when it takes it and, when it fails, the command that reruns it exactly.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>

namespace chorus::testing_support {

inline constexpr const char* kTestSeedVariable = "CHORUS_TEST_SEED";

namespace seed_detail {

// The process's seed: CHORUS_TEST_SEED when set (decimal or 0x hex, 0..2^32-1), else drawn
// once from std::random_device, so every run of the suite explores new inputs. Throws
// std::invalid_argument (failing the test that asked) for a value that is not such a number.
inline std::uint32_t processSeed() {
  static const std::uint32_t seed = [] {
    const char* text = std::getenv(kTestSeedVariable);
    if (text == nullptr || *text == '\0') return static_cast<std::uint32_t>(std::random_device{}());
    char* end = nullptr;
    errno = 0;
    const unsigned long long value = std::strtoull(text, &end, 0);
    if (*text == '-' || *end != '\0' || errno != 0 || value > 0xffffffffULL)
      throw std::invalid_argument(std::string(kTestSeedVariable) + "='" + text +
                                  "' is not a seed: use a number from 0 to 4294967295");
    return static_cast<std::uint32_t>(value);
  }();
  return seed;
}

// Whether the running test took the seed (the reporter prints the rerun command only then).
inline std::atomic<bool> seedTaken{false};

inline std::string fullTestName(const ::testing::TestInfo& info) {
  return std::string(info.test_suite_name()) + "." + info.name();
}

// `name` as an anchored ctest -R regular expression.
inline std::string exactRegex(const std::string& name) {
  std::string out = "^";
  for (const char ch : name) {
    if (std::string_view(".[]()*+?^$|\\{}").find(ch) != std::string_view::npos) out += '\\';
    out += ch;
  }
  return out + "$";
}

// The directory of this test binary, where ctest finds the tests (CTestTestfile.cmake).
inline std::string binaryDirectory() {
  std::error_code error;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", error);
  return error ? std::string(".") : exe.parent_path().string();
}

// Prints the seed and the exact rerun command after a failed test that took the seed.
class SeedReporter : public ::testing::EmptyTestEventListener {
  void OnTestStart(const ::testing::TestInfo&) override { seedTaken = false; }
  void OnTestEnd(const ::testing::TestInfo& info) override {
    if (!seedTaken || !info.result()->Failed()) return;
    const std::uint32_t seed = processSeed();
    std::printf(
        "[   SEED   ] %s failed with %s=%u; rerun it exactly:\n             %s=%u ctest "
        "--test-dir '%s' --output-on-failure -R '%s'\n",
        fullTestName(info).c_str(), kTestSeedVariable, seed, kTestSeedVariable, seed,
        binaryDirectory().c_str(), exactRegex(fullTestName(info)).c_str());
    std::fflush(stdout);
  }
};

// Installed once per test binary, before main (gtest owns and deletes the listener).
inline const bool seedReporterInstalled = [] {
  ::testing::UnitTest::GetInstance()->listeners().Append(new SeedReporter);
  return true;
}();

}  // namespace seed_detail

// The seed for the calling test's random generator: CHORUS_TEST_SEED, or one drawn per
// process. The first call in a test prints it.
inline std::uint32_t testSeed() {
  const std::uint32_t seed = seed_detail::processSeed();
  if (!seed_detail::seedTaken.exchange(true)) {
    const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::printf("[   SEED   ] %s: %s=%u\n",
                info != nullptr ? seed_detail::fullTestName(*info).c_str() : "(no test)",
                kTestSeedVariable, seed);
    std::fflush(stdout);
  }
  return seed;
}

}  // namespace chorus::testing_support
