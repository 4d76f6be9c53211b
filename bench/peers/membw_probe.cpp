// bench_membw: this machine's memory streaming rates on 2 threads (perf/memory_ceiling.h), the
// ceiling against which bench_compare prints each size's fraction (compare.sh runs it in every
// round). Run: ./bench_membw [--mib 64] [--repeats 5] [--json FILE]
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <fstream>
#include <string>

#include "chorus/error.h"
#include "perf/memory_ceiling.h"

namespace {

int runProbe(int argc, char** argv) {
  CLI::App app{"bench_membw: memory streaming rates of 2 threads (a += b, memcpy)", "bench_membw"};
  int mib = 64;
  int repeats = 5;
  std::string jsonPath;
  app.add_option("--mib", mib, "MiB per buffer (each thread has two)")
      ->check(CLI::Range(1, 4096))
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
  const chorus::perf::MemoryRates rates =
      chorus::perf::probeMemoryRates(static_cast<std::size_t>(mib) << 20, repeats);
  fmt::print("memory, 2 threads, {} MiB buffers: a+=b {:.2f} GB/s of traffic, memcpy {:.2f} GB/s\n",
             mib, rates.addTrafficGbps, rates.copyGbps);
  if (!jsonPath.empty()) {
    std::ofstream out(jsonPath);
    out << chorus::perf::memoryRatesJson(rates);
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
