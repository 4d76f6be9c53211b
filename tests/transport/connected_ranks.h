// For the tests of transports whose ranks connect through a store (tcp, ucx): ranks as threads
// of this process, a spinning wait with a deadline, and two checks every such transport must
// pass: FIFO order, sizes and tags with more messages than slots, and an exact ring AllReduce.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "algorithms/registry.h"
#include "runtime/interpreter.h"
#include "runtime/run_check.h"
#include "transport/connections.h"
#include "transport/in_memory_store.h"

namespace chorus::transport::testing_support {

// Connects rank `rank` of `nranks` through `store` (connectTcp, connectUcx with fixed options).
using Connect = std::function<std::unique_ptr<ConnectionSet>(Store& store, int rank, int nranks)>;

// Runs body(rank, connections) on `n` threads, each with its own view of one group; a rank's
// exception fails the test naming the rank.
inline void onConnectedRanks(int n, const Connect& connect,
                             const std::function<void(int, ConnectionSet&)>& body) {
  auto store = std::make_shared<InMemoryStore>();
  std::vector<std::thread> threads;
  std::vector<std::string> errors(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      try {
        auto connections = connect(*store, r, n);
        body(r, *connections);
      } catch (const std::exception& e) {
        errors[static_cast<std::size_t>(r)] = e.what();
      }
    });
  for (auto& t : threads)
    t.join();
  for (int r = 0; r < n; ++r)
    EXPECT_EQ(errors[static_cast<std::size_t>(r)], "") << "rank " << r;
}

// Yields until done(); throws naming `what` after 20 s.
template <typename F>
void spinUntil(F done, const char* what) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline)
      throw std::runtime_error(std::string("timed out: ") + what);
    std::this_thread::yield();
  }
}

// Rank 0 sends 50 messages of varied sizes (up to `slotBytes`) and tags on each of `channels`
// to rank 1, which checks their order, sizes, tags and bytes. With FIFOs of a few slots,
// credits must flow back.
inline void expectOrderedFifos(const Connect& connect, std::size_t slotBytes,
                               const std::vector<int>& channels) {
  constexpr int kMessages = 50;
  auto sizeOf = [&](int m) { return static_cast<std::size_t>(m) * 7919 % (slotBytes + 1); };
  onConnectedRanks(2, connect, [&](int rank, ConnectionSet& c) {
    for (int channel : channels) {
      if (rank == 0) {
        Fifo& f = c.sendFifo(1, channel);
        for (int m = 0; m < kMessages; ++m) {
          std::uint8_t* slot = nullptr;
          spinUntil([&] { return (slot = f.trySendSlot()) != nullptr; }, "a free slot");
          for (std::size_t i = 0; i < sizeOf(m); ++i)
            slot[i] = static_cast<std::uint8_t>(m + i + channel);
          f.commitSend(sizeOf(m), 1000 + m);
        }
      } else {
        Fifo& f = c.recvFifo(0, channel);
        for (int m = 0; m < kMessages; ++m) {
          RecvSlot slot;
          spinUntil([&] { return f.tryRecvSlot(&slot); }, "a message");
          ASSERT_EQ(slot.bytes, sizeOf(m));
          ASSERT_EQ(slot.tag, static_cast<std::uint64_t>(1000 + m));
          for (std::size_t i = 0; i < slot.bytes; ++i)
            ASSERT_EQ(slot.data[i], static_cast<std::uint8_t>(m + i + channel));
          f.releaseRecv();
        }
      }
    }
  });
}

// A ring AllReduce with `instances` channels, 3 calls on 3 ranks, checked exactly.
inline void expectExactRing(const Connect& connect, int instances) {
  constexpr int kRanks = 3;
  algorithms::BuildRequest request;
  request.algorithm = "allreduce.ring";
  request.ranks = kRanks;
  request.instances = instances;
  const ir::Algorithm ring = algorithms::compileAlgorithm(request).algorithm;
  onConnectedRanks(kRanks, connect, [&](int rank, ConnectionSet& c) {
    runtime::RunOptions options;
    options.count = 100'000;  // many slots per connection
    options.type = DataType::int32;
    runtime::RankBuffers buffers(ring, rank, options);
    for (int call = 0; call < 3; ++call) {
      buffers.reset();
      const auto id = runtime::identifyCall(ring, options, call);
      c.publishCall(id.description);
      runtime::ExecOptions exec;
      exec.callTag = id.tag;
      exec.timeout = std::chrono::seconds(20);
      runtime::executeRank(
          ring, rank, {buffers.input(), buffers.output(), options.count, options.type, options.op},
          c, exec);
      runtime::RunReport report;
      runtime::checkRankOutput(ring, rank, options, buffers.output(), &report);
      EXPECT_TRUE(report.ok()) << report.firstWrong;
      EXPECT_EQ(report.checkedElements, options.count);
    }
  });
}

}  // namespace chorus::transport::testing_support
