// Compiled by nvcc (never run; tests/CMakeLists.txt, label device): the headers a GPU executor
// shares with the host (the op table, the reference applyStep, the tiling) must build as
// device code, warning-free, with a device-only reduction functor.
#include <cstddef>

#include "ir/apply_step.h"
#include "ir/step_semantics.h"
#include "ir/tiling.h"

namespace chorus::device_check {

struct DeviceSum {
  __device__ float operator()(float a, float b) const { return a + b; }
};

// One thread applies one step and reports the tiling of its chunk: every shared function is
// instantiated for the device.
__global__ void applyOneStep(ir::OpKind op, const float* src, float* dst, const float* received,
                             float* sent, std::size_t n, std::size_t* tiles) {
  const ir::StepOperands<float> io{src, dst, received, sent};
  ir::applyStep(op, io, n, DeviceSum{});
  if (ir::opReceives(op) || ir::opSends(op) || ir::opLandsMessage(op))
    *tiles = ir::tileChunks(n, sizeof(float), ir::kLlMessageCap, 2).tiles;
  else
    *tiles = ir::opSemantics(op).storesDst ? 1 : 0;
}

}  // namespace chorus::device_check
