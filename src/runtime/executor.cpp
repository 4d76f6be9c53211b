#include "runtime/executor.h"

#include <cstring>
#include <deque>

#include <fmt/format.h>

#include "runtime/cpu_executor.h"
#include "support/error.h"
#include "support/named_table.h"

namespace chorus::runtime {
namespace {

static_assert(CpuExecutor::kName == kDefaultExecutor, "the default executor is the CPU one");

// The built-in executors, in the order listings show them.
std::deque<ExecutorEntry> builtinExecutors() {
  std::deque<ExecutorEntry> entries;
  entries.push_back({std::string(CpuExecutor::kName),
                     "the interpreter on host threads, over any transport",
                     [](int rank, transport::ConnectionSet& connections,
                        const ExecutorConfig& config) -> std::unique_ptr<Executor> {
                       return std::make_unique<CpuExecutor>(rank, connections, config);
                     }});
  return entries;
}

NamedTable<ExecutorEntry>& executorTable() {
  static NamedTable<ExecutorEntry> table("executor", builtinExecutors());
  return table;
}

}  // namespace

std::vector<const ExecutorEntry*> listExecutors() {
  return executorTable().list();
}

const ExecutorEntry& requireExecutor(std::string_view name, std::string_view what) {
  if (const ExecutorEntry* entry = executorTable().find(name)) return *entry;
  std::string known;
  for (const ExecutorEntry* entry : listExecutors())
    known += fmt::format("{}'{}' ({})", known.empty() ? "" : ", ", entry->name, entry->description);
  throw OptionError(
      fmt::format("{} '{}' is not an executor; the executors are {}", what, name, known));
}

std::unique_ptr<Executor> makeExecutor(std::string_view name, int rank,
                                       transport::ConnectionSet& connections,
                                       const ExecutorConfig& config) {
  std::unique_ptr<Executor> executor = requireExecutor(name).make(rank, connections, config);
  CHORUS_INTERNAL_ASSERT(executor != nullptr, "an executor factory returned nothing");
  return executor;
}

void Executor::waitForStream(void* /*stream*/) {}

void Executor::copyBytes(void* dst, const void* src, std::size_t bytes) {
  if (bytes > 0 && dst != src) std::memmove(dst, src, bytes);
}

void* Executor::spare(std::size_t bytes) {
  if (spare_.size() < bytes) spare_.resize(bytes);
  return spare_.data();
}

void registerExecutor(ExecutorEntry entry) {
  if (!entry.name.empty() && !entry.make)
    throw OptionError(
        fmt::format("registerExecutor: executor '{}' needs a factory (make)", entry.name));
  executorTable().add(std::move(entry), "registerExecutor");
}

bool registerExecutorIfAbsent(ExecutorEntry entry) {
  if (!entry.make)
    throw OptionError(
        fmt::format("registerExecutorIfAbsent: executor '{}' needs a factory (make)", entry.name));
  return executorTable().addIfAbsent(std::move(entry), "registerExecutorIfAbsent");
}

}  // namespace chorus::runtime
