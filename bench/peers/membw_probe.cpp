// bench_membw: this machine's memory streaming rates on 2 threads at several working-set sizes
// (perf/memory_ceiling.h), the ceiling against which bench_compare prints each size's fraction
// (compare.sh runs it in every round). Run: ./bench_membw [--mib 0.0625,0.25,1,4,16,64,256]
// [--repeats 5] [--json FILE]
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <fstream>
#include <string>
#include <vector>

#include "chorus/error.h"
#include "perf/memory_ceiling.h"
#include "support/size.h"

namespace {

int runProbe(int argc, char** argv) {
  CLI::App app{"bench_membw: memory rates of 2 threads (a += b, copy) by working set",
               "bench_membw"};
  // Per buffer; a probe's working set is 4 buffers (2 threads, a and b): 256 KiB to 1 GiB,
  // which spans the working sets of compare.sh's default sweep at 2 ranks.
  std::vector<double> mib{0.0625, 0.25, 1, 4, 16, 64, 256};
  int repeats = 5;
  std::string jsonPath;
  app.add_option("--mib", mib, "MiB per buffer, one probe each (each thread has two buffers)")
      ->delimiter(',')
      ->check(CLI::Range(0.015625, 4096.0))
      ->capture_default_str();
  app.add_option("--repeats", repeats, "Timed passes (the median is kept)")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  app.add_option("--json", jsonPath, "Also write the rates as JSON (bench_compare --ceiling)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    return app.exit(error);
  }
  std::vector<std::size_t> bytes;
  for (double m : mib)
    bytes.push_back(static_cast<std::size_t>(m * (1 << 20)));
  const chorus::perf::MemoryProfile profile = chorus::perf::probeMemoryProfile(bytes, repeats);
  fmt::print("memory, 2 threads (working set: a+=b GB/s of traffic, copy GB/s):");
  for (const chorus::perf::MemoryRates& point : profile.points)
    fmt::print(" {} {:.1f}/{:.1f}", chorus::formatSize(point.workingSetBytes), point.addTrafficGbps,
               point.copyGbps);
  fmt::print("\n");
  if (!jsonPath.empty()) {
    std::ofstream out(jsonPath);
    out << chorus::perf::memoryProfileJson(profile);
    if (!out) throw chorus::OptionError(fmt::format("cannot write '{}'", jsonPath));
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return runProbe(argc, argv);
  } catch (const chorus::UserError& error) {
    fmt::print(stderr, "bench_membw: error: {}\n", error.what());
    return 2;
  } catch (const std::exception& error) {
    fmt::print(stderr, "bench_membw: internal error: {}\n", error.what());
    return 3;
  }
}
