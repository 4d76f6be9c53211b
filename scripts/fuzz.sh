#!/usr/bin/env bash
# Runs chorus's libFuzzer targets (fuzz/) for a bounded time each, starting from the corpus in
# fuzz/corpus/<target>/ and the kept crash inputs in fuzz/regressions/<target>/. New corpus
# entries go to build-fuzz/corpus/<target>/ (merge the useful ones into fuzz/corpus by hand). A
# crash leaves its input in build-fuzz/crashes/ and fails the script: fix it, then copy the
# input to fuzz/regressions/<target>/, where tests/unit/fuzz_regressions_test.cpp replays it
# in every test run.
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET]    (default 60; needs clang and libFuzzer:
#                                            apt-get install clang)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
if ! command -v clang++ >/dev/null; then
  echo "fuzz.sh: clang++ not found; install it with: apt-get install clang" >&2
  exit 2
fi
cmake -S . -B build-fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang \
  -DCHORUS_BUILD_FUZZERS=ON -DCHORUS_BUILD_TESTS=OFF -DCHORUS_BUILD_BENCH=OFF \
  -DCHORUS_BUILD_EXAMPLES=OFF -DCHORUS_WERROR=OFF >/dev/null
cmake --build build-fuzz --target fuzz_tcp_frame fuzz_plan_reader
mkdir -p build-fuzz/crashes
status=0
for target in tcp_frame plan_reader; do
  mkdir -p "build-fuzz/corpus/$target" "fuzz/regressions/$target"
  echo "=== fuzz_$target for ${seconds}s"
  if ! "build-fuzz/fuzz/fuzz_$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
      -artifact_prefix="build-fuzz/crashes/$target-" "build-fuzz/corpus/$target" \
      "fuzz/corpus/$target" "fuzz/regressions/$target" 2>"build-fuzz/$target.log"; then
    echo "fuzz_$target FOUND A CRASH: see build-fuzz/$target.log and build-fuzz/crashes/" >&2
    tail -30 "build-fuzz/$target.log" >&2
    status=1
  else
    tail -2 "build-fuzz/$target.log"
  fi
done
exit $status
