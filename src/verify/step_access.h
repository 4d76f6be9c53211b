// Which local buffer ranges one IR step reads and writes (verify stage). Peer-side fields
// (dst of a send, src of a recv) are informational and never accessed.
#pragma once

#include <array>
#include <cstddef>

#include "ir/algorithm.h"

namespace chorus::verify {

struct StepAccess {
  ir::BufferKind buffer = ir::BufferKind::input;
  int index = 0;
  int count = 1;
  bool reads = false;
  bool writes = false;
  bool isSrc = false;  // the step's src field (else dst)
};

struct StepAccesses {
  std::array<StepAccess, 2> items{};
  std::size_t size = 0;
  const StepAccess* begin() const { return items.data(); }
  const StepAccess* end() const { return items.data() + size; }
};

// The local accesses of `step`: src when the op reads it, dst when the op writes it (reduce
// also reads dst).
StepAccesses localAccesses(const ir::Step& step);

}  // namespace chorus::verify
