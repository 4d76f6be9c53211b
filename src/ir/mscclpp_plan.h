// Reader for MSCCL++ execution plans (microsoft/mscclpp: the JSON its Python DSL
// `mscclpp.language` emits and its executor runs; schema in docs/ir.md "MSCCL++ execution
// plans") into the one-sided ops of the chorus IR (ir stage).
#pragma once

#include <string>
#include <string_view>

#include "ir/algorithm.h"

namespace chorus::ir {

// Reads one plan. Each MSCCL++ op becomes one or more steps in the same threadblock, in order:
//   copy → copy; put/pws/pwsf → one put per destination entry (on a port channel pws adds a
//   signal after each put and pwsf a signal and a flush; on a memory channel both are plain
//   puts, as the executor runs them); get → one get per entry; re → copy + reduce per extra
//   source; rre → copy + getReduce per remote source; res/rres → the same, then a put of the
//   result per remote destination; signal/wait/rlxsignal/rlxwait/flush → one step per channel;
//   sem_acquire/sem_release → one step per semaphore; barrier → barrier; nop → nop; the LL
//   packet ops → copies, reduces and puts with packet operands (Step::srcPackets, dstPackets).
// Thread-block groups (tbg_info) cut each entry into tbg_size slices: chunk counts are scaled
// by the least common multiple of the group sizes so that every slice is whole chunks.
// A `pipeline` op's body is read once over whole chunks, where that computes what MSCCL++'s
// unit-by-unit iterations do (ir/mscclpp_pipelines.h); else the plan is refused naming why.
// Throws ParseError naming `sourceName` and the JSON path of what is wrong; ops chorus cannot
// run (NVLS switch ops) are refused by name.
Algorithm readMscclppPlan(std::string_view text, const std::string& sourceName);

}  // namespace chorus::ir
