// The GPU's device-to-device copy rate (cuda layer): the ceiling bench_gpu and
// `chorus bench --device cuda` report beside their rows (docs/gpu.md "Benchmark").
#pragma once

#include <cstddef>

namespace chorus::cuda {

// Bytes per second of a `bytes`-byte cudaMemcpy between two buffers of the current GPU, timed
// as perf::secondsPerCall times. Throws CommError when CUDA fails.
double deviceCopyRate(std::size_t bytes);

}  // namespace chorus::cuda
