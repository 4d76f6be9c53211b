// Several executor threads per rank (ExecOptions::threads): the threadblocks of one rank are
// shared among threads whose cross-threadblock waits are atomic counters. Results must stay
// exact, and failures must still end every thread (no hang).
#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

#include "algorithms/registry.h"
#include "compile_for_test.h"
#include "runtime/interpreter.h"
#include "support/error.h"
#include "transport/thread/thread_group.h"

namespace chorus {
namespace {

using testing_support::compileForTest;

// AllReduce of rank r's (r + 1 + i % 5) over all ranks with `threads` executor threads each.
void checkAllReduce(const ir::Algorithm& a, int threads) {
  const int n = a.nranks;
  const std::size_t count = (std::size_t{1} << 20) / 4 + 24;  // over kParallelCallBytes
  std::vector<std::vector<float>> in(n), out(n, std::vector<float>(count));
  for (int r = 0; r < n; ++r)
    for (std::size_t i = 0; i < count; ++i)
      in[r].push_back(static_cast<float>(r + 1 + i % 5));
  transport::ThreadGroup group(n, {8, 16 << 10});
  std::vector<std::thread> ranks;
  for (int r = 0; r < n; ++r)
    ranks.emplace_back([&, r] {
      runtime::ExecOptions options;
      options.threads = threads;
      options.timeout = std::chrono::milliseconds(60'000);
      runtime::executeRank(a, r, {in[r].data(), out[r].data(), count}, group.rank(r), options);
    });
  for (auto& t : ranks)
    t.join();
  const float base = static_cast<float>(n * (n + 1) / 2);
  for (int r = 0; r < n; ++r)
    for (std::size_t i = 0; i < count; ++i)
      ASSERT_EQ(out[r][i], base + static_cast<float>(n * (i % 5)))
          << a.name << " threads " << threads << " rank " << r << " [" << i << "]";
}

TEST(ExecutorThreads, ExactResultsWithSeveralThreadsPerRank) {
  checkAllReduce(compileForTest("allreduce.ring", 3), 2);
  checkAllReduce(compileForTest("allreduce.allpairs", 4), 3);
  checkAllReduce(compileForTest("allreduce.hierarchical", 0, 2, 2), 4);
}

TEST(ExecutorThreads, TimeoutStillEndsEveryThread) {
  const auto a = compileForTest("allreduce.allpairs", 3);
  const std::size_t count = (std::size_t{1} << 20) / 4 * 3;
  std::vector<float> in(count, 1.0f), out(count);
  transport::ThreadGroup group(3, {8, 16 << 10});
  runtime::ExecOptions options;
  options.threads = 3;
  options.timeout = std::chrono::milliseconds(300);
  const auto start = std::chrono::steady_clock::now();
  // Ranks 1 and 2 never call: rank 0 must time out, naming what it waits for.
  try {
    runtime::executeRank(a, 0, {in.data(), out.data(), count}, group.rank(0), options);
    FAIL() << "expected TimeoutError";
  } catch (const TimeoutError& e) {
    EXPECT_NE(std::string(e.what()).find("waits for"), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

}  // namespace
}  // namespace chorus
