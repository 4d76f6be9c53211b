#include "runtime/executor.h"

#include <deque>
#include <mutex>

#include <fmt/format.h>

#include "runtime/cpu_executor.h"
#include "support/error.h"

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

// Every registered executor. A deque: registering never moves an entry.
struct ExecutorTable {
  std::mutex mutex;
  std::deque<ExecutorEntry> entries = builtinExecutors();
};

ExecutorTable& executorTable() {
  static ExecutorTable table;
  return table;
}

const ExecutorEntry* findExecutorLocked(const ExecutorTable& table, std::string_view name) {
  for (const ExecutorEntry& entry : table.entries)
    if (entry.name == name) return &entry;
  return nullptr;
}

}  // namespace

std::vector<const ExecutorEntry*> listExecutors() {
  ExecutorTable& table = executorTable();
  std::lock_guard lock(table.mutex);
  std::vector<const ExecutorEntry*> entries;
  for (const ExecutorEntry& entry : table.entries)
    entries.push_back(&entry);
  return entries;
}

const ExecutorEntry& requireExecutor(std::string_view name, std::string_view what) {
  {
    ExecutorTable& table = executorTable();
    std::lock_guard lock(table.mutex);
    if (const ExecutorEntry* entry = findExecutorLocked(table, name)) return *entry;
  }
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

void registerExecutor(ExecutorEntry entry) {
  if (entry.name.empty()) throw OptionError("registerExecutor: the executor needs a name");
  if (!entry.make)
    throw OptionError(
        fmt::format("registerExecutor: executor '{}' needs a factory (make)", entry.name));
  ExecutorTable& table = executorTable();
  std::lock_guard lock(table.mutex);
  if (findExecutorLocked(table, entry.name) != nullptr)
    throw OptionError(
        fmt::format("registerExecutor: an executor named '{}' is registered already", entry.name));
  table.entries.push_back(std::move(entry));
}

}  // namespace chorus::runtime
