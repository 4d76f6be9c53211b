#!/usr/bin/env bash
# The README's test command: builds build/ with -Werror (Release, as demo.sh does) and runs
# every test (the Release build also compiles the CUDA code where nvcc is; GPU tests skip
# without a GPU), rebuilds with ASan+UBSan (Debug) and runs the tests again (but the few
# release-only scale tests named below), runs the runtime, transport, API and
# device-interpreter tests under TSan (RelWithDebInfo), then checks clang-format on all tracked
# sources. Tests labelled soak (long runs such as the bounded fuzzing, fuzz.bounded) are left
# out everywhere: run them with `ctest -L soak` in build/.
# Exits non-zero if any stage fails; the last line summarizes.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

failed=()
passed=()
# Each stage's output also goes to test-logs/<n>.log, so the summary at the end can repeat
# what failed (CI often shows only the last lines of a long log).
log_dir=test-logs
mkdir -p "$log_dir"
stage_logs=()
run_stage() {
  local name=$1
  shift
  local log="$log_dir/$((${#passed[@]} + ${#failed[@]} + 1)).log"
  echo
  echo "=== $name"
  if "$@" 2>&1 | tee "$log"; [ "${PIPESTATUS[0]}" -eq 0 ]; then
    passed+=("$name")
  else
    echo "=== $name: FAILED" >&2
    failed+=("$name")
    stage_logs+=("$log")
  fi
}

# The lines of a failed stage's log that say what failed: compiler errors, failed or timed
# out tests, and gtest failure messages (at most 60 lines per stage).
print_failures() {
  local i
  for i in "${!failed[@]}"; do
    echo
    echo "=== what failed in ${failed[$i]} (full log: ${stage_logs[$i]})"
    grep -E 'error:|FAILED|\*\*\*[A-Z]|\(Failed\)|\(Timeout\)|\(SEGFAULT\)|\(Subprocess aborted\)|Exception|Failure$|^Expected|Which is|Value of|  Actual|ERROR: |runtime error:' \
      "${stage_logs[$i]}" | grep -v "Not Run (Disabled)" | head -60
  done
}

# build/ is configured exactly as demo.sh configures it (Release, -O3, -Werror, the Python
# package), so running the README's two commands in order reuses the demo's build instead of
# meeting its settings.
build_and_test() {
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCHORUS_WERROR=ON -DCHORUS_PYTHON=ON &&
    cmake --build build &&
    (cd build && ctest --output-on-failure -j2 -LE soak)
}

# Quantitative scale tests that run 30-40x slower unoptimised under ASan (minutes each) and check
# figures at cluster sizes, not memory use: the Release stage runs them; under ASan the smaller
# tests of the same code (synth, trees, simulator, hierarchical algorithms) stand in for them.
release_only_tests='^P2Lower\.TreeBeatsRingWhenLatencyDominates$|^SynthReductionCli\.P2FindingsOnTwoA100Nodes$|^Trees\.RandomMatricesGiveValidTrees$|^HierarchicalRails\.'

asan_build_and_test() {
  cmake -S . -B build-asan -G Ninja -DCHORUS_WERROR=ON -DCHORUS_SANITIZE=ON \
    -DCMAKE_BUILD_TYPE=Debug -DCHORUS_BUILD_BENCH=OFF -DCHORUS_BUILD_EXAMPLES=OFF &&
    cmake --build build-asan &&
    (cd build-asan && ctest --output-on-failure -j2 -LE soak -E "$release_only_tests")
}

# The runtime, transports, communicator API and the device interpreter's host build run ranks
# (and blocks) as threads: check them under TSan too.
tsan_build_and_test() {
  cmake -S . -B build-tsan -G Ninja -DCHORUS_WERROR=ON -DCHORUS_SANITIZE_THREAD=ON \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCHORUS_BUILD_BENCH=OFF -DCHORUS_BUILD_EXAMPLES=OFF &&
    cmake --build build-tsan --target test_runtime test_transport test_api test_device &&
    (cd build-tsan && ctest --output-on-failure -j2 -L 'runtime|transport|api|device' -LE soak)
}

check_format() {
  local files
  if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    files=$(git ls-files -- '*.h' '*.cpp')
  else
    files=$(find include src tools tests bench examples -name '*.h' -o -name '*.cpp' 2>/dev/null)
  fi
  if [ -z "$files" ]; then
    echo "no sources to check"
    return 0
  fi
  # shellcheck disable=SC2086
  clang-format --dry-run --Werror $files
}

if ! bash scripts/install_deps.sh; then
  echo "test.sh: FAIL (could not install dependencies)"
  exit 1
fi
run_stage "build+ctest (build/)" build_and_test
run_stage "asan build+ctest (build-asan/)" asan_build_and_test
run_stage "tsan build+ctest runtime,transport,api,device (build-tsan/)" tsan_build_and_test
run_stage "clang-format" check_format

echo
if [ ${#failed[@]} -eq 0 ]; then
  echo "test.sh: PASS (${passed[*]})"
  exit 0
fi
print_failures
echo
echo "test.sh: FAIL (${#failed[@]} stage(s) failed: ${failed[*]})"
exit 1
