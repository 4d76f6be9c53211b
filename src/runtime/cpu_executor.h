// The CPU executor (runtime layer): runs calls with the interpreter (interpreter.h) on the
// calling thread and up to ExecutorConfig::threads - 1 helpers, keeping one Workspace (staged
// copies, scratch, plan facts) across the calls of its rank.
#pragma once

#include "runtime/executor.h"
#include "runtime/interpreter.h"

namespace chorus::runtime {

class CpuExecutor final : public Executor {
 public:
  static constexpr std::string_view kName = "cpu";

  CpuExecutor(int rank, transport::ConnectionSet& connections, const ExecutorConfig& config);

  std::string_view name() const override { return kName; }
  // executeRank() with the config's knobs, `options` and this executor's workspace. Allocates
  // nothing once a repeated call's plan and count have been seen; sets only the per-call
  // fields of its ExecOptions.
  void run(const ir::Algorithm& algorithm, const CollectiveArgs& args,
           const CallOptions& options) override;

  // The workspace the calls share (Workspace::evictions counts their evicted messages).
  const Workspace& workspace() const { return workspace_; }

 private:
  Workspace workspace_;
  ExecOptions exec_;  // the config's knobs and &workspace_, set once; run() fills in the rest
};

}  // namespace chorus::runtime
