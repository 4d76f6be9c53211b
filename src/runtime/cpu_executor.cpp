#include "runtime/cpu_executor.h"

namespace chorus::runtime {

CpuExecutor::CpuExecutor(int rank, transport::ConnectionSet& connections,
                         const ExecutorConfig& config)
    : Executor(rank, connections), config_(config) {}

void CpuExecutor::run(const ir::Algorithm& algorithm, const CollectiveArgs& args,
                      const CallOptions& options) {
  ExecOptions exec;
  exec.timeout = options.timeout;
  exec.collectiveLabel = options.label;
  exec.hasLabelSequence = options.hasLabelSequence;
  exec.labelSequence = options.labelSequence;
  exec.callTag = options.callTag;
  exec.workspace = &workspace_;
  exec.planKey = options.planKey;
  exec.threads = config_.threads;
  exec.streamingCallBytes = config_.streamingCallBytes;
  exec.alwaysByReference = config_.alwaysByReference;
  executeRank(algorithm, rank(), args, connections(), exec);
}

}  // namespace chorus::runtime
