#include "device/call_layout.h"

#include "ir/algorithm.h"
#include "ir/collective.h"
#include "runtime/datatype.h"

namespace chorus::device {

namespace {

int slot(ir::BufferKind kind) {
  return static_cast<int>(kind);
}

struct Shape {
  std::shared_ptr<const ir::Collective> collective;
  std::size_t q = 1;           // chunks per block
  std::size_t chunkBytes = 0;  // padded chunk
  std::size_t blockBytes = 0;  // the caller's block: count elements
  ir::Location home[2];
};

Shape shapeOf(const ir::Algorithm& algorithm, int rank, const runtime::CollectiveArgs& args,
              const KernelGeometry& geometry) {
  Shape s;
  s.collective = ir::collectiveOf(algorithm);
  s.q = ir::chunksPerBlock(algorithm);
  const std::size_t elemSize = runtime::dataTypeSize(args.type);
  s.chunkBytes = geometry.chunkElems * elemSize;
  s.blockBytes = args.count * elemSize;
  for (auto kind : {ir::BufferKind::input, ir::BufferKind::output})
    s.home[slot(kind)] = s.collective->canonical(rank, {kind, 0});
  return s;
}

}  // namespace

CallBuffers prepareCall(const ir::Algorithm& algorithm, int rank,
                        const runtime::CollectiveArgs& args, const KernelGeometry& geometry,
                        CallMemory& memory) {
  const Shape s = shapeOf(algorithm, rank, args, geometry);
  auto* userIn = static_cast<unsigned char*>(const_cast<void*>(args.input));
  auto* userOut = static_cast<unsigned char*>(args.output);
  const std::size_t elemSize = runtime::dataTypeSize(args.type);
  const std::size_t inBytes = runtime::inputElements(algorithm, rank, args.count) * elemSize;
  const std::size_t outBytes = runtime::outputElements(algorithm, rank, args.count) * elemSize;
  bool aliasOk = true;
  if (algorithm.inPlace) {
    for (auto kind : {ir::BufferKind::input, ir::BufferKind::output}) {
      const ir::Location c = s.home[slot(kind)];
      if (c.buffer == kind) continue;
      unsigned char* self = kind == ir::BufferKind::input ? userIn : userOut;
      unsigned char* other = c.buffer == ir::BufferKind::input ? userIn : userOut;
      aliasOk = aliasOk && self == other + static_cast<std::size_t>(c.index) * s.chunkBytes;
    }
  } else if (userIn && userOut && inBytes && outBytes) {
    aliasOk = userIn + inBytes <= userOut || userOut + outBytes <= userIn;
  }
  CallBuffers b;
  b.staged = !geometry.divisible || !aliasOk;
  if (!b.staged) {
    b.base[slot(ir::BufferKind::input)] = userIn;
    b.base[slot(ir::BufferKind::output)] = userOut;
  } else {
    for (auto kind : {ir::BufferKind::input, ir::BufferKind::output}) {
      if (s.home[slot(kind)].buffer != kind) continue;
      const int chunks = kind == ir::BufferKind::input ? s.collective->inputChunks(rank)
                                                       : s.collective->outputChunks(rank);
      b.base[slot(kind)] = memory.zeroed(kind, static_cast<std::size_t>(chunks) * s.chunkBytes);
    }
  }
  // Aliased-away buffers point into their canonical buffer.
  for (auto kind : {ir::BufferKind::input, ir::BufferKind::output}) {
    const ir::Location c = s.home[slot(kind)];
    if (c.buffer != kind)
      b.base[slot(kind)] =
          b.base[slot(c.buffer)] + static_cast<std::size_t>(c.index) * s.chunkBytes;
  }
  // The caller's input lands where the canonical input lives, block by block.
  if (b.staged && userIn != nullptr) {
    const std::size_t blocks = static_cast<std::size_t>(s.collective->inputChunks(rank)) / s.q;
    for (std::size_t k = 0; k < blocks; ++k)
      memory.copy(b.base[slot(ir::BufferKind::input)] + k * s.q * s.chunkBytes,
                  userIn + k * s.blockBytes, s.blockBytes);
  }
  b.base[slot(ir::BufferKind::scratch)] = memory.zeroed(
      ir::BufferKind::scratch,
      static_cast<std::size_t>(algorithm.ranks.at(static_cast<std::size_t>(rank)).scratchChunks) *
          s.chunkBytes);
  return b;
}

void finishCall(const ir::Algorithm& algorithm, int rank, const runtime::CollectiveArgs& args,
                const KernelGeometry& geometry, const CallBuffers& buffers, CallMemory& memory) {
  if (!buffers.staged || args.output == nullptr) return;
  const Shape s = shapeOf(algorithm, rank, args, geometry);
  auto* userOut = static_cast<unsigned char*>(args.output);
  const std::size_t blocks = static_cast<std::size_t>(s.collective->outputChunks(rank)) / s.q;
  for (std::size_t k = 0; k < blocks; ++k)
    memory.copy(userOut + k * s.blockBytes,
                buffers.base[slot(ir::BufferKind::output)] + k * s.q * s.chunkBytes, s.blockBytes);
}

bool outputIsReduced(const ir::Algorithm& algorithm, int rank) {
  return ir::collectiveReduces(algorithm.collective) &&
         (algorithm.collective != ir::CollectiveKind::reduce || rank == algorithm.root);
}

}  // namespace chorus::device
