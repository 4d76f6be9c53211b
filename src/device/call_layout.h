// Where one rank's call puts its chunks for the device interpreter (device layer): the
// interpreter addresses chunk c of a buffer at base + c * chunkElems elements. When the call's
// buffers already have that layout (the chunks cut the count exactly and the buffers alias the
// way the plan expects) the bases are the caller's pointers; otherwise the call is staged
// through padded copies, as the CPU interpreter does (runtime/interpreter.h). `CallMemory` says
// how memory is allocated and copied: host memory in the host build, device memory on a GPU.
#pragma once

#include <cstddef>

#include "device/kernel_plan.h"
#include "ir/algorithm.h"
#include "runtime/collective_args.h"

namespace chorus::device {

class CallMemory {
 public:
  virtual ~CallMemory() = default;
  // `bytes` of zeroed memory for buffer `kind`, 16-byte aligned, kept until the next call
  // asks for the same kind.
  virtual unsigned char* zeroed(ir::BufferKind kind, std::size_t bytes) = 0;
  virtual void copy(void* dst, const void* src, std::size_t bytes) = 0;
};

struct CallBuffers {
  unsigned char* base[3] = {nullptr, nullptr, nullptr};  // by ir::BufferKind
  bool staged = false;
};

// Sets up the bases for `args` and, when staging, copies the caller's input in.
CallBuffers prepareCall(const ir::Algorithm& algorithm, int rank,
                        const runtime::CollectiveArgs& args, const KernelGeometry& geometry,
                        CallMemory& memory);

// When staged, copies the output back to the caller's buffer.
void finishCall(const ir::Algorithm& algorithm, int rank, const runtime::CollectiveArgs& args,
                const KernelGeometry& geometry, const CallBuffers& buffers, CallMemory& memory);

// Whether `rank`'s output holds reductions an avg call divides by the rank count.
bool outputIsReduced(const ir::Algorithm& algorithm, int rank);

}  // namespace chorus::device
