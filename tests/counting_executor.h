// A test executor that counts its calls, then runs them on the CPU executor: shows that a
// caller (the communicator, the runners) runs through the executor it was given.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <string_view>

#include "runtime/cpu_executor.h"
#include "runtime/executor.h"

namespace chorus::testing_support {

class CountingExecutor final : public runtime::Executor {
 public:
  // `name` and `calls` must outlive the executor.
  CountingExecutor(int rank, transport::ConnectionSet& connections,
                   const runtime::ExecutorConfig& config, std::string_view name,
                   std::atomic<int>& calls)
      : Executor(rank, connections), cpu_(rank, connections, config), name_(name), calls_(calls) {}
  std::string_view name() const override { return name_; }
  void run(const ir::Algorithm& algorithm, const runtime::CollectiveArgs& args,
           const runtime::CallOptions& options) override {
    ++calls_;
    cpu_.run(algorithm, args, options);
  }

 private:
  runtime::CpuExecutor cpu_;
  std::string_view name_;
  std::atomic<int>& calls_;
};

// The table entry of a CountingExecutor named `name` that counts into `calls` (which must live
// as long as the process: the entry is never removed).
inline runtime::ExecutorEntry countingExecutorEntry(const char* name, std::string description,
                                                    std::atomic<int>& calls) {
  return {name, std::move(description),
          [name, &calls](int rank, transport::ConnectionSet& connections,
                         const runtime::ExecutorConfig& config) {
            return std::unique_ptr<runtime::Executor>(
                new CountingExecutor(rank, connections, config, name, calls));
          }};
}

}  // namespace chorus::testing_support
