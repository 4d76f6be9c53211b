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

#include "perf/timing.h"
#include "runtime/stream_copy.h"
#include "support/error.h"

namespace chorus::perf {

namespace {

constexpr int kThreads = 2;
// Each thread moves at least this much per timed pass.
constexpr std::size_t kMinPassBytes = std::size_t{64} << 20;

// Keeps the compiler from merging or dropping repeated passes over the same buffer.
void compilerBarrier(void* p) {
  asm volatile("" : : "g"(p) : "memory");
}

// Seconds per pass of `kernel(thread)` run by kThreads threads at once: each pass starts
// together and lasts from the first thread's start to the last thread's end, as the threads
// read the clock themselves (the coordinating thread may be descheduled on a machine with as
// many cores as kernel threads); the median over `repeats` passes after one warm-up pass.
template <typename Kernel>
double timePasses(int repeats, Kernel kernel) {
  using Clock = std::chrono::steady_clock;
  const auto passes = static_cast<std::size_t>(repeats) + 1;
  std::vector<Clock::time_point> starts(passes * kThreads), ends(passes * kThreads);
  std::barrier sync(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (std::size_t pass = 0; pass < passes; ++pass) {
        sync.arrive_and_wait();
        starts[pass * kThreads + static_cast<std::size_t>(t)] = Clock::now();
        kernel(t);
        ends[pass * kThreads + static_cast<std::size_t>(t)] = Clock::now();
        sync.arrive_and_wait();
      }
    });
  for (std::thread& thread : threads)
    thread.join();
  std::vector<double> seconds;
  for (std::size_t pass = 1; pass < passes; ++pass) {  // pass 0 warms up (page faults, caches)
    const auto first = starts.begin() + static_cast<std::ptrdiff_t>(pass * kThreads);
    const auto last = ends.begin() + static_cast<std::ptrdiff_t>(pass * kThreads);
    seconds.push_back(std::chrono::duration<double>(*std::max_element(last, last + kThreads) -
                                                    *std::min_element(first, first + kThreads))
                          .count());
  }
  return medianOf(seconds);
}

}  // namespace

MemoryRates probeMemoryRates(std::size_t bytes, int repeats) {
  const std::size_t floats = std::max<std::size_t>(bytes / sizeof(float), 1024);
  const std::size_t bufferBytes = floats * sizeof(float);
  // Passes over buffers in the cache last microseconds: repeat the kernel within a pass.
  const std::size_t laps = std::max<std::size_t>(1, kMinPassBytes / bufferBytes);
  std::vector<std::vector<float>> a(kThreads), b(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    a[t].assign(floats, 1.0f);
    b[t].assign(floats, 0.0f);  // adding zeros keeps the values finite over every pass
  }
  MemoryRates rates;
  const double addSeconds = timePasses(repeats, [&](int t) {
    float* __restrict x = a[t].data();
    const float* __restrict y = b[t].data();
    for (std::size_t lap = 0; lap < laps; ++lap) {
      for (std::size_t i = 0; i < floats; ++i)
        x[i] += y[i];
      compilerBarrier(x);
    }
  });
  const double streamBytes = static_cast<double>(bufferBytes * laps) * kThreads;
  rates.addTrafficGbps = 3 * streamBytes / addSeconds * 1e-9;
  // The faster of cached stores (memcpy) and streaming stores (runtime::streamCopy): which
  // wins depends on whether the buffers fit the cache.
  double copySeconds = 0;
  for (const bool streaming : {false, true}) {
    const double seconds = timePasses(repeats, [&](int t) {
      for (std::size_t lap = 0; lap < laps; ++lap) {
        if (streaming)
          runtime::streamCopy(b[t].data(), a[t].data(), bufferBytes);
        else
          std::memcpy(b[t].data(), a[t].data(), bufferBytes);
        compilerBarrier(b[t].data());
      }
    });
    copySeconds = copySeconds == 0 ? seconds : std::min(copySeconds, seconds);
  }
  rates.copyGbps = streamBytes / copySeconds * 1e-9;
  rates.workingSetBytes = static_cast<std::uint64_t>(bufferBytes) * 2 * kThreads;
  return rates;
}

MemoryProfile probeMemoryProfile(std::span<const std::size_t> bytesPerBuffer, int repeats) {
  MemoryProfile profile;
  for (std::size_t bytes : bytesPerBuffer)
    profile.points.push_back(probeMemoryRates(bytes, repeats));
  std::sort(profile.points.begin(), profile.points.end(),
            [](const MemoryRates& x, const MemoryRates& y) {
              return x.workingSetBytes < y.workingSetBytes;
            });
  return profile;
}

std::optional<std::uint64_t> ceilingWorkingSetBytes(std::string_view collective, int ranks,
                                                    std::uint64_t bytes, bool inPlace) {
  if (ranks != 2) return std::nullopt;
  if (inPlace && (collective == "allreduce" || collective == "reducescatter" ||
                  collective == "allgather" || collective == "alltoall"))
    return 2 * bytes;
  if (collective == "allreduce" || collective == "alltoall") return 4 * bytes;
  if (collective == "reducescatter" || collective == "allgather") return 3 * bytes;
  return std::nullopt;
}

const MemoryRates& ratesForWorkingSet(const MemoryProfile& profile, std::uint64_t bytes) {
  CHORUS_INTERNAL_ASSERT(!profile.points.empty(), "a memory profile has at least one point");
  for (const MemoryRates& point : profile.points)
    if (point.workingSetBytes >= bytes) return point;
  return profile.points.back();
}

std::optional<double> ceilingBusbw(std::string_view collective, int ranks, bool inPlace,
                                   const MemoryRates& rates) {
  if (ranks != 2) return std::nullopt;
  if (collective == "allreduce") return rates.addTrafficGbps / 5;
  if (collective == "reducescatter") return rates.addTrafficGbps / 6;
  if (collective == "allgather" || collective == "alltoall")
    return rates.copyGbps / (inPlace ? 2 : 4);
  return std::nullopt;
}

std::optional<double> ceilingBusbw(std::string_view collective, int ranks, std::uint64_t bytes,
                                   bool inPlace, const MemoryProfile& profile) {
  const auto workingSet = ceilingWorkingSetBytes(collective, ranks, bytes, inPlace);
  if (!workingSet || profile.points.empty()) return std::nullopt;
  return ceilingBusbw(collective, ranks, inPlace, ratesForWorkingSet(profile, *workingSet));
}

std::string memoryProfileJson(const MemoryProfile& profile) {
  nlohmann::json points = nlohmann::json::array();
  for (const MemoryRates& point : profile.points)
    points.push_back({{"working_set_bytes", point.workingSetBytes},
                      {"add_traffic_gbps", point.addTrafficGbps},
                      {"copy_gbps", point.copyGbps}});
  const MemoryRates largest = profile.points.empty() ? MemoryRates{} : profile.points.back();
  nlohmann::json out = {{"add_traffic_gbps", largest.addTrafficGbps},
                        {"copy_gbps", largest.copyGbps},
                        {"by_working_set", points}};
  return out.dump(2) + "\n";
}

namespace {

// The two rates of `json` (a file's top level or one of its points); `where` names it.
MemoryRates ratesOf(const nlohmann::json& json, const std::string& where) {
  MemoryRates rates;
  for (const auto& [field, target] : {std::pair{"add_traffic_gbps", &rates.addTrafficGbps},
                                      std::pair{"copy_gbps", &rates.copyGbps}}) {
    if (!json.is_object() || !json.contains(field) || !json[field].is_number() ||
        json[field].get<double>() <= 0)
      throw ParseError(fmt::format(
          "{} is not a memory rates record: it needs a positive number \"{}\" (bench_membw "
          "--json writes one)",
          where, field));
    *target = json[field].get<double>();
  }
  return rates;
}

}  // namespace

MemoryProfile readMemoryProfileFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ParseError(fmt::format("cannot read memory rates file '{}'", path));
  std::stringstream text;
  text << in.rdbuf();
  const nlohmann::json json = nlohmann::json::parse(text.str(), nullptr, false);
  const std::string where = fmt::format("'{}'", path);
  MemoryProfile profile;
  if (!json.is_object() || !json.contains("by_working_set")) {
    profile.points.push_back(ratesOf(json, where));
    return profile;
  }
  const nlohmann::json& points = json["by_working_set"];
  if (!points.is_array() || points.empty())
    throw ParseError(
        fmt::format("'{}': \"by_working_set\" must be a non-empty array of probe points", path));
  for (std::size_t i = 0; i < points.size(); ++i) {
    const std::string at = fmt::format("'{}' by_working_set[{}]", path, i);
    MemoryRates point = ratesOf(points[i], at);
    if (!points[i].contains("working_set_bytes") ||
        !points[i]["working_set_bytes"].is_number_unsigned())
      throw ParseError(fmt::format("{} needs a whole number \"working_set_bytes\"", at));
    point.workingSetBytes = points[i]["working_set_bytes"].get<std::uint64_t>();
    if (!profile.points.empty() && point.workingSetBytes <= profile.points.back().workingSetBytes)
      throw ParseError(fmt::format("{}: probe points must ascend by working_set_bytes", at));
    profile.points.push_back(point);
  }
  return profile;
}

MemoryProfile medianProfile(std::span<const MemoryProfile> profiles) {
  MemoryProfile out;
  if (profiles.empty()) return out;
  out = profiles.front();
  for (const MemoryProfile& profile : profiles) {
    bool same = profile.points.size() == out.points.size();
    for (std::size_t i = 0; same && i < out.points.size(); ++i)
      same = profile.points[i].workingSetBytes == out.points[i].workingSetBytes;
    if (!same)
      throw ParseError(
          "the memory rates files were probed at different working-set sizes; give files of one "
          "bench_membw version and the same --mib list");
  }
  for (std::size_t i = 0; i < out.points.size(); ++i) {
    std::vector<double> add, copy;
    for (const MemoryProfile& profile : profiles) {
      add.push_back(profile.points[i].addTrafficGbps);
      copy.push_back(profile.points[i].copyGbps);
    }
    out.points[i].addTrafficGbps = medianOf(add);
    out.points[i].copyGbps = medianOf(copy);
  }
  return out;
}

}  // namespace chorus::perf
