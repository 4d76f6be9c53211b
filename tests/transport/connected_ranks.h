// For the tests of transports whose ranks connect through a store (tcp, ucx): ranks as threads
// of this process, a spinning wait with a deadline, and checks every such transport must pass:
// FIFO order, sizes and tags with more messages than slots, messages by reference and posted
// receives (single copy), and an exact ring AllReduce.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
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

inline std::uint8_t byReferencePattern(int round, int message, std::size_t i) {
  return static_cast<std::uint8_t>(
      (i * 13 + static_cast<std::size_t>(message) * 7 + static_cast<std::size_t>(round) * 3) % 251);
}

inline RemoteRegion stridedRegion(const std::vector<std::uint8_t>& bytes, std::size_t piece,
                                  std::size_t stride) {
  RemoteRegion region;
  region.address = reinterpret_cast<std::uintptr_t>(bytes.data());
  region.pieceBytes = piece;
  region.stride = stride;
  region.pieces = static_cast<std::uint32_t>(bytes.size() / stride);
  return region;
}

// Messages by reference leave straight from the sender's memory, in strided pieces (more than
// one sendmsg takes), and settle once the socket took them: then the sender overwrites the
// regions, and the receiver still gets the original bytes. Several rounds, so credits and
// tickets wrap around the slots.
// `connect` makes FIFOs of 8 slots of 1 MiB with singleCopyBytes 1.
inline void expectMessagesByReference(const Connect& connect) {
  constexpr int kRounds = 4;
  constexpr int kMessages = 8;
  constexpr std::size_t kPiece = 1000, kStride = 1024, kPieces = 1024;
  std::atomic<int> sent{0}, read{0};
  onConnectedRanks(2, connect, [&](int rank, ConnectionSet& c) {
    if (rank == 0) {
      Fifo& f = c.sendFifo(1, 0);
      ASSERT_TRUE(f.acceptsRemote(kPiece * kPieces));
      ASSERT_FALSE(f.acceptsRemote((1 << 20) + 1)) << "larger than a slot";
      ASSERT_TRUE(f.remoteSavesACopy());
      std::vector<std::vector<std::uint8_t>> memory(kMessages,
                                                    std::vector<std::uint8_t>(kStride * kPieces));
      for (int round = 0; round < kRounds; ++round) {
        spinUntil([&] { return read.load() == round; }, "the receiver's round");
        std::vector<std::uint64_t> tickets;
        for (int m = 0; m < kMessages; ++m) {
          auto& bytes = memory[static_cast<std::size_t>(m)];
          for (std::size_t i = 0; i < bytes.size(); ++i)
            bytes[i] = byReferencePattern(round, m, i);
          spinUntil([&] { return f.trySendSlot() != nullptr; }, "a credit");
          tickets.push_back(f.commitRemote(stridedRegion(bytes, kPiece, kStride),
                                           700 + static_cast<std::uint64_t>(m)));
        }
        for (const std::uint64_t ticket : tickets)
          spinUntil([&] { return f.remoteSettled(ticket); }, "the transport to take a message");
        for (auto& bytes : memory)
          std::fill(bytes.begin(), bytes.end(), std::uint8_t{0xEE});
        sent.store(round + 1);
      }
      spinUntil([&] { return read.load() == kRounds; }, "the last round read");
    } else {
      Fifo& f = c.recvFifo(0, 0);
      for (int round = 0; round < kRounds; ++round) {
        spinUntil([&] { return sent.load() > round; }, "the sender's round");
        for (int m = 0; m < kMessages; ++m) {
          RecvSlot slot;
          spinUntil([&] { return f.tryRecvSlot(&slot); }, "a message");
          ASSERT_FALSE(slot.remote)
              << "the receiver posted nothing: every message lands in its slot";
          ASSERT_EQ(slot.bytes, kPiece * kPieces);
          ASSERT_EQ(slot.tag, 700u + static_cast<std::uint64_t>(m));
          for (std::size_t j = 0; j < slot.bytes; ++j)
            ASSERT_EQ(slot.data[j], byReferencePattern(round, m, j / kPiece * kStride + j % kPiece))
                << "round " << round << " message " << m << " byte " << j;
          f.releaseRecv();
        }
        read.store(round + 1);
      }
    }
  });
}

// Posted receives: the receiver posts strided regions for the next 6 messages (one ahead of
// the other) before any is sent, and each payload lands in its region, not in the slot
// (delivered). A message whose size or tag does not match its post lands in its slot as usual.
// `connect` makes FIFOs of 8 slots of 1 MiB with singleCopyBytes 1.
inline void expectPostedReceives(const Connect& connect) {
  constexpr std::size_t kPiece = 1000, kStride = 1024, kPieces = 300;  // 300 KB, many iovecs
  constexpr int kMessages = 6;
  std::atomic<bool> posted{false};
  const auto payloadOf = [&](int m) {
    // Message 4 is a byte short of its post; message 5 carries another tag.
    std::vector<std::uint8_t> bytes(kPiece * kPieces - (m == 4 ? 1 : 0));
    for (std::size_t j = 0; j < bytes.size(); ++j)
      bytes[j] = byReferencePattern(1, m, j);
    return bytes;
  };
  onConnectedRanks(2, connect, [&](int rank, ConnectionSet& c) {
    if (rank == 0) {
      Fifo& f = c.sendFifo(1, 0);
      spinUntil([&] { return posted.load(); }, "the receiver's posts");
      for (int m = 0; m < kMessages; ++m) {
        const auto bytes = payloadOf(m);
        std::uint8_t* slot = nullptr;
        spinUntil([&] { return (slot = f.trySendSlot()) != nullptr; }, "a credit");
        std::memcpy(slot, bytes.data(), bytes.size());
        f.commitSend(bytes.size(), m == 5 ? 99 : 500 + static_cast<std::uint64_t>(m));
      }
    } else {
      Fifo& f = c.recvFifo(0, 0);
      ASSERT_TRUE(f.acceptsPost(kPiece * kPieces));
      std::vector<std::vector<std::uint8_t>> memory(
          kMessages, std::vector<std::uint8_t>(kStride * kPieces, 0xEE));
      for (int m = 0; m < kMessages; ++m)
        spinUntil(
            [&] {
              return f.postRecv(stridedRegion(memory[static_cast<std::size_t>(m)], kPiece, kStride),
                                500 + static_cast<std::uint64_t>(m), static_cast<std::size_t>(m));
            },
            "a post");
      posted.store(true);
      for (int m = 0; m < kMessages; ++m) {
        const auto& mine = memory[static_cast<std::size_t>(m)];
        RecvSlot slot;
        spinUntil([&] { return f.tryRecvSlot(&slot); }, "a message");
        const auto want = payloadOf(m);
        ASSERT_EQ(slot.bytes, want.size());
        const bool matches = m < 4;
        ASSERT_EQ(slot.delivered, matches) << "message " << m;
        for (std::size_t j = 0; j < want.size(); ++j) {
          const std::uint8_t got = matches ? mine[j / kPiece * kStride + j % kPiece] : slot.data[j];
          ASSERT_EQ(got, want[j]) << "message " << m << " byte " << j;
        }
        if (!matches) {
          EXPECT_EQ(mine[0], 0xEE) << "a message that did not match wrote the region";
        } else {
          EXPECT_EQ(mine[kPiece], 0xEE) << "wrote between the pieces";
        }
        f.releaseRecv();
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
