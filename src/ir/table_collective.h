// Custom collectives defined by tables (chorus.lang's Python `Collective`, msccl-tools'
// init_buffers/Chunk destinations): per rank, the size of the input and output buffers, the
// symbolic value each input chunk starts with (the precondition) and the value each output
// chunk must end with, or none (the postcondition). Out of place only.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/collective.h"

namespace chorus::ir {

struct CollectiveTable {
  std::string name;
  int nranks = 0;
  // initial[r][i]: the value input chunk i of rank r starts with (uninitialized = unused).
  std::vector<std::vector<ChunkValue>> initial;
  // expected[r][i]: the value output chunk i of rank r must hold; nullopt = any value.
  std::vector<std::vector<std::optional<ChunkValue>>> expected;
};

// Checks the table (one row per rank, values naming input chunks that exist and start
// initialized) and returns its collective. Its chunk factor is its largest buffer in chunks
// (MSCCL's nchunksperloop); refined(f) cuts every chunk into f. Throws OptionError naming the
// first bad entry, or when the name is one of chorus's own custom collectives.
std::shared_ptr<const Collective> makeTableCollective(CollectiveTable table);

// Registers `collective` (from makeTableCollective) under its name, so plans naming it
// (ir::collectiveOf: the runtime's checks, the verifier) get its postcondition; options with a
// chunk factor that is a multiple of its own get the refined table, others none.
void registerTableCollective(const std::shared_ptr<const Collective>& collective);

}  // namespace chorus::ir
