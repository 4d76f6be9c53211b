// Seconds per call of enqueued work (perf layer): the timing bench_gpu and the GPU copy-rate
// ceiling share, so a row and its ceiling are measured the same way.
#pragma once

#include <algorithm>
#include <chrono>

namespace chorus::perf {

// Seconds per call of `enqueue` (queues one call; `sync` waits for all queued): batches double
// until one lasts 20 ms (at most 1000 calls), after 5 warm-up calls; the best of 3 batches.
template <class Enqueue, class Sync>
double secondsPerCall(Enqueue enqueue, Sync sync) {
  for (int i = 0; i < 5; ++i)
    enqueue();
  sync();
  int calls = 1;
  double best = 1e30;
  for (int round = 0; round < 3;) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i)
      enqueue();
    sync();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (seconds < 0.02 && calls < 1000) {
      calls *= 2;
      continue;
    }
    best = std::min(best, seconds / calls);
    ++round;
  }
  return best;
}

}  // namespace chorus::perf
