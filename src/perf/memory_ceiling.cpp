#include "perf/memory_ceiling.h"

#include <algorithm>
#include <barrier>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "chorus/error.h"
#include "perf/timing.h"

namespace chorus::perf {

namespace {

constexpr int kThreads = 2;

// Seconds per pass of `kernel(thread)` run by kThreads threads at once: each pass starts
// together and lasts until the slowest thread ends; the median over `repeats` passes after one
// warm-up pass.
template <typename Kernel>
double timePasses(int repeats, Kernel kernel) {
  std::vector<double> seconds;
  std::barrier sync(kThreads + 1);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int pass = 0; pass <= repeats; ++pass) {
        sync.arrive_and_wait();
        kernel(t);
        sync.arrive_and_wait();
      }
    });
  for (int pass = 0; pass <= repeats; ++pass) {
    sync.arrive_and_wait();
    const auto start = std::chrono::steady_clock::now();
    sync.arrive_and_wait();
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (pass > 0) seconds.push_back(elapsed);  // pass 0 warms up (page faults, caches)
  }
  for (std::thread& thread : threads)
    thread.join();
  return medianOf(seconds);
}

}  // namespace

MemoryRates probeMemoryRates(std::size_t bytes, int repeats) {
  const std::size_t floats = std::max<std::size_t>(bytes / sizeof(float), 1024);
  std::vector<std::vector<float>> a(kThreads), b(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    a[t].assign(floats, 1.0f);
    b[t].assign(floats, 0.0f);  // adding zeros keeps the values finite over every pass
  }
  MemoryRates rates;
  const double addSeconds = timePasses(repeats, [&](int t) {
    float* __restrict x = a[t].data();
    const float* __restrict y = b[t].data();
    for (std::size_t i = 0; i < floats; ++i)
      x[i] += y[i];
  });
  const double streamBytes = static_cast<double>(floats * sizeof(float)) * kThreads;
  rates.addTrafficGbps = 3 * streamBytes / addSeconds * 1e-9;
  const double copySeconds = timePasses(
      repeats, [&](int t) { std::memcpy(b[t].data(), a[t].data(), floats * sizeof(float)); });
  rates.copyGbps = streamBytes / copySeconds * 1e-9;
  return rates;
}

std::optional<double> ceilingBusbw(std::string_view collective, int ranks,
                                   const MemoryRates& rates) {
  if (ranks != 2) return std::nullopt;
  if (collective == "allreduce") return rates.addTrafficGbps / 5;
  if (collective == "reducescatter") return rates.addTrafficGbps / 6;
  if (collective == "allgather" || collective == "alltoall") return rates.copyGbps / 2;
  return std::nullopt;
}

std::string memoryRatesJson(const MemoryRates& rates) {
  nlohmann::json out = {{"add_traffic_gbps", rates.addTrafficGbps}, {"copy_gbps", rates.copyGbps}};
  return out.dump(2) + "\n";
}

MemoryRates readMemoryRatesFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ParseError(fmt::format("cannot read memory rates file '{}'", path));
  std::stringstream text;
  text << in.rdbuf();
  const nlohmann::json json = nlohmann::json::parse(text.str(), nullptr, false);
  MemoryRates rates;
  for (const auto& [field, target] : {std::pair{"add_traffic_gbps", &rates.addTrafficGbps},
                                      std::pair{"copy_gbps", &rates.copyGbps}}) {
    if (!json.is_object() || !json.contains(field) || !json[field].is_number() ||
        json[field].get<double>() <= 0)
      throw ParseError(fmt::format(
          "'{}' is not a memory rates file: it needs a positive number \"{}\" (bench_membw "
          "--json writes one)",
          path, field));
    *target = json[field].get<double>();
  }
  return rates;
}

}  // namespace chorus::perf
