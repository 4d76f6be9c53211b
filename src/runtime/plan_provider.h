// The plan-provider interface: how a communicator asks for the ir::Algorithm to run for one
// call. The runtime never builds plans itself (docs/design.md "Data flow"); src/selection/ wires
// this to the compiled algorithm library, CHORUS_ALGO, CHORUS_ALGO_DIR and the built-ins.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "ir/algorithm.h"
#include "runtime/datatype.h"

namespace chorus::runtime {

// One call as the selection sees it.
struct PlanRequest {
  ir::CollectiveKind collective = ir::CollectiveKind::allreduce;
  int nranks = 0;
  int root = 0;  // broadcast and reduce
  bool inPlace = false;
  // nccl-tests' "size": the AllReduce/Broadcast/Reduce buffer, the gathered AllGather output,
  // the ReduceScatter input, the AllToAll send buffer. Plan size ranges refer to this.
  std::size_t bytes = 0;
  std::size_t count = 0;  // NCCL count (see CollectiveArgs)
  DataType type = DataType::float32;
};

struct Plan {
  std::shared_ptr<const ir::Algorithm> algorithm;  // never null
  std::string name;    // what ran, for logs and lastPlan(): "allreduce.ring", a file name...
  std::string source;  // why: "CHORUS_ALGO", "CHORUS_ALGO_DIR", "built-in default", ...
};

// Thread-safe: a provider may be shared by the communicators of one process.
class PlanProvider {
 public:
  virtual ~PlanProvider() = default;
  // The plan for `request`; every rank of a communicator must get the same answer for the same
  // request (providers are deterministic given the same environment). Throws OptionError when
  // an override names something unusable, CompileError if a plan cannot be built.
  virtual Plan select(const PlanRequest& request) = 0;
};

}  // namespace chorus::runtime
