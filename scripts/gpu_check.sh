#!/usr/bin/env bash
# The device check (docs/gpu.md "The device check"): one command for a machine with an NVIDIA
# GPU. Configures and builds the GPU executor for the GPU present (CHORUS_CUDA=ON,
# architectures "native"), runs the GPU tests (every library algorithm and protocol with 2 to 8
# ranks on one GPU, exact), compute-sanitizer's memcheck and racecheck on a small case, then
# the benchmarks (bench_gpu: four collectives, 2/4/8 ranks, 8 B-256 MiB, beside the GPU's copy
# rate; chorus bench --device cuda: AllReduce of 8 ranks through the communicator), and writes one summary, $OUT/gpu-check.md (or gpu-check-out/ without $OUT), with the date, the
# device, the commit and each stage's result and time. Exits non-zero if any stage failed.
# Sized to finish in well under 8 minutes on an H100 (16 cores): a rerun fits the same window.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

out=${OUT:-gpu-check-out}
mkdir -p "$out"
summary="$out/gpu-check.md"
build=build-gpu
jobs=$(nproc)
failed=0

{
  echo "# chorus device check"
  echo
  echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "- commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo ' (with uncommitted changes)')"
  echo "- device: $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 | head -1)"
  echo "- nvcc: $(nvcc --version 2>&1 | tail -1)"
  echo "- host: $(nproc) cores"
  echo
  echo "| stage | result | seconds |"
  echo "|---|---|---|"
} >"$summary"

# Runs one stage, logging to $out/<name>.log, and adds its row to the summary.
stage() {
  local name=$1
  shift
  local start=$SECONDS rc
  "$@" >"$out/$name.log" 2>&1
  rc=$?
  local result="passed"
  [ "$rc" -eq 0 ] || {
    result="FAILED (exit $rc, see $name.log)"
    failed=1
  }
  echo "| $name | $result | $((SECONDS - start)) |" >>"$summary"
  echo "=== $name: $result ($((SECONDS - start)) s)"
  return "$rc"
}

configure() {
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCHORUS_WERROR=ON \
    -DCHORUS_CUDA=ON -DCHORUS_CUDA_ARCHITECTURES=native -DCHORUS_PYTHON=OFF \
    -DCHORUS_BUILD_BENCH=ON -DCHORUS_BUILD_EXAMPLES=OFF
}

stage configure configure &&
  stage build cmake --build "$build" --target test_gpu test_device bench_gpu chorus -j "$jobs" || {
  cat "$summary"
  exit 1
}

# The GPU suite in one process (one CUDA context), but the tests that fork ranks: a child
# cannot use CUDA once its parent has, so those run in a process that never touches it. Then
# the host build's suite for comparison.
forked='CudaExecutorProcesses.*'
stage gpu-tests "$build/tests/test_gpu" --gtest_brief=1 --gtest_filter="-$forked"
stage gpu-process-tests "$build/tests/test_gpu" --gtest_brief=1 --gtest_filter="$forked"
stage host-build-tests "$build/tests/test_device" --gtest_brief=1

# compute-sanitizer on a small case of each protocol (3 ranks, ring AllReduce) and, for
# memcheck, the executor's calls on streams.
sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
small='Registry/GpuLibrary.ExactOnEveryProtocol/allreduce_ring_3r'
stage memcheck "$sanitizer" --tool memcheck --error-exitcode 1 \
  "$build/tests/test_gpu" --gtest_filter="$small:Ranks/CudaExecutor.CallsOnStreamsAreQueuedInStreamOrder/2"
stage racecheck "$sanitizer" --tool racecheck --error-exitcode 1 \
  "$build/tests/test_gpu" --gtest_filter="$small"

# At most 4 minutes, so the whole check stays under 8 on an H100.
stage bench timeout 240 "$build/bench/bench_gpu"
# The same through the communicator (executor cuda, calls on streams): 8 ranks on the GPU.
stage bench-comm timeout 90 "$build/chorus" bench allreduce --ranks 8 --device cuda \
  -b 8 -e 64M -f 8 --iters 10 --warmup 2

{
  echo
  echo "GPU test summary:"
  echo
  echo '```'
  grep -E '^\[  (PASSED|FAILED|SKIPPED) |tests? from .* ran' "$out/gpu-tests.log" | head -40
  echo '```'
  echo
  echo "Benchmark (bench_gpu):"
  echo
  echo '```'
  cat "$out/bench.log"
  echo '```'
  echo
  echo "Benchmark through the communicator (chorus bench --device cuda):"
  echo
  echo '```'
  cat "$out/bench-comm.log"
  echo '```'
} >>"$summary"
cat "$summary"
exit "$failed"
