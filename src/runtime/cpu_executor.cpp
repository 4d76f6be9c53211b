#include "runtime/cpu_executor.h"

namespace chorus::runtime {

CpuExecutor::CpuExecutor(int rank, transport::ConnectionSet& connections,
                         const ExecutorConfig& config)
    : Executor(rank, connections) {
  exec_.workspace = &workspace_;
  exec_.threads = config.threads;
  exec_.streamingWorkingSetBytes = config.streamingWorkingSetBytes;
  exec_.alwaysByReference = config.alwaysByReference;
}

void CpuExecutor::run(const ir::Algorithm& algorithm, const CollectiveArgs& args,
                      const CallOptions& options) {
  exec_.timeout = options.timeout;
  exec_.collectiveLabel = options.label;
  exec_.hasLabelSequence = options.hasLabelSequence;
  exec_.labelSequence = options.labelSequence;
  exec_.callTag = options.callTag;
  exec_.planKey = options.planKey;
  executeRank(algorithm, rank(), args, connections(), exec_);
}

}  // namespace chorus::runtime
