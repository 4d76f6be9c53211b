// The device interpreter's host build with every rank a process of its own: mailboxes in
// /dev/shm found through a FileStore, the host's stand-in for GPU ranks in separate processes
// sharing CUDA IPC handles (src/device/host_rank.h). Exact results on every protocol; a rank
// that dies before the call: the others fail within the timeout, naming the wait; a peer that
// never shows up: the set-up times out and removes its /dev/shm name.
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "device/host_rank.h"
#include "library_cases.h"
#include "process_threads.h"
#include "runtime/run_check.h"
#include "support/error.h"
#include "temp_dir.h"
#include "transport/file_store.h"

namespace chorus {
namespace {

// Runs body(rank) in `n` forked children; their exit codes (-1: killed after `limit`).
std::vector<int> runForkedRanks(int n, const std::function<int(int)>& body,
                                std::chrono::seconds limit = std::chrono::seconds(60)) {
  std::vector<pid_t> pids;
  for (int r = 0; r < n; ++r) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      int code = 100;
      try {
        code = body(r);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "rank %d threw: %s\n", r, e.what());
      }
      std::fflush(stderr);
      ::_exit(code);
    }
    pids.push_back(pid);
  }
  std::vector<int> codes(static_cast<std::size_t>(n), -1);
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (int r = 0; r < n; ++r) {
    int status = 0;
    while (::waitpid(pids[static_cast<std::size_t>(r)], &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(pids[static_cast<std::size_t>(r)], SIGKILL);
        ::waitpid(pids[static_cast<std::size_t>(r)], &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    if (WIFEXITED(status)) codes[static_cast<std::size_t>(r)] = WEXITSTATUS(status);
  }
  return codes;
}

constexpr int kExact = 0, kWrong = 1, kTimedOut = 3, kOtherError = 4;

class DeviceInterpreterProcesses : public ::testing::Test {
 protected:
  void SetUp() override {
    if (testing_support::processThreadCount() > 1)
      GTEST_SKIP() << "fork needs a single-threaded test process; run this test on its own (as "
                      "ctest does)";
  }
};

TEST_F(DeviceInterpreterProcesses, EveryProtocolIsExactWithRanksAsProcesses) {
  for (ir::Protocol protocol : {ir::Protocol::simple, ir::Protocol::ll, ir::Protocol::ll128}) {
    const ir::Algorithm plan = testing_support::compileOnProtocol("allreduce.ring", 3, protocol);
    testing_support::TempDir dir("chorus-device-processes");
    const std::vector<int> codes = runForkedRanks(3, [&](int r) {
      transport::FileStore store(dir.path());
      device::HostGroupOptions options;
      options.slotBytes = 1024;  // many tiles
      device::HostKernelRank rank(plan, r, store, "group", device::MailboxSharing::processes,
                                  options);
      const runtime::RunOptions run = testing_support::exactRun(10'007);
      runtime::RankBuffers buffers(plan, r, run);
      runtime::RunReport report;
      for (int call = 0; call < 2; ++call) {
        buffers.reset();
        rank.run({buffers.input(), buffers.output(), run.count, run.type, run.op}, run.timeout);
      }
      runtime::checkRankOutput(plan, r, run, buffers.output(), &report);
      if (!report.ok()) std::fprintf(stderr, "rank %d: %s\n", r, report.firstWrong.c_str());
      return report.ok() && report.checkedElements > 0 ? kExact : kWrong;
    });
    EXPECT_EQ(codes, (std::vector<int>{kExact, kExact, kExact})) << ir::protocolName(protocol);
  }
}

TEST_F(DeviceInterpreterProcesses, ARankThatDiesLeavesTheOthersAClearTimeout) {
  const ir::Algorithm plan =
      testing_support::compileOnProtocol("allreduce.ring", 3, ir::Protocol::simple);
  testing_support::TempDir dir("chorus-device-processes");
  const auto start = std::chrono::steady_clock::now();
  const std::vector<int> codes = runForkedRanks(3, [&](int r) {
    transport::FileStore store(dir.path());
    device::HostKernelRank rank(plan, r, store, "group", device::MailboxSharing::processes);
    if (r == 1) ::_exit(kOtherError + 10);  // dies after setting up, before the call
    const runtime::RunOptions run = testing_support::exactRun(1000);
    runtime::RankBuffers buffers(plan, r, run);
    buffers.reset();
    try {
      rank.run({buffers.input(), buffers.output(), run.count, run.type, run.op},
               std::chrono::milliseconds(500));
    } catch (const TimeoutError& e) {
      std::fprintf(stderr, "rank %d: %s\n", r, e.what());
      return kTimedOut;
    } catch (const CommError& e) {
      std::fprintf(stderr, "rank %d: %s\n", r, e.what());
      return std::string_view(e.what()).find("because rank") != std::string_view::npos
                 ? kTimedOut
                 : kOtherError;
    }
    return kExact;
  });
  EXPECT_EQ(codes, (std::vector<int>{kTimedOut, kOtherError + 10, kTimedOut}));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
}

// A peer that never shows up: the set-up times out, naming the missing key, and the rank's
// /dev/shm name is removed again.
TEST(DeviceInterpreterMailboxes, AMissingPeerTimesOutAndLeavesNoSharedMemoryName) {
  const ir::Algorithm plan =
      testing_support::compileOnProtocol("allreduce.ring", 2, ir::Protocol::simple);
  testing_support::TempDir dir("chorus-device-processes");
  transport::FileStore store(dir.path());
  EXPECT_THROW(device::HostKernelRank(plan, 0, store, "group", device::MailboxSharing::processes,
                                      {}, std::chrono::milliseconds(200)),
               TimeoutError);
  const std::string mine = fmt::format("chorus-dev-{}-", ::getpid());
  for (const auto& entry : std::filesystem::directory_iterator("/dev/shm"))
    EXPECT_FALSE(entry.path().filename().string().starts_with(mine)) << entry.path();
}

}  // namespace
}  // namespace chorus
