// Single copy (messages by reference, Fifo::commitRemote) and streaming stores: the slot
// protocol between a claiming receiver and an evicting sender, the ledger of regions a rank
// must not change, the streaming kernels at odd offsets and sizes, and whole collectives on
// thread ranks with user buffers at odd offsets, out of place and in place (out-of-place plans
// called in place: AllGather runs on the aliased buffers as they are, AllToAll privatizes), every
// element checked; the same collectives with tcp ranks (threads joined over loopback), where a
// message by reference leaves for the socket straight from the buffer. Processes
// (process_vm_readv) are covered in shm_run_test.cpp.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <numeric>
#include <thread>
#include <vector>

#include <unistd.h>

#include "compile_for_test.h"
#include "runtime/interpreter.h"
#include "runtime/reduce_kernels.h"
#include "runtime/remote_ledger.h"
#include "runtime/stream_copy.h"
#include "transport/in_memory_store.h"
#include "transport/tcp/tcp_transport.h"
#include "transport/thread/thread_fifo.h"
#include "transport/thread/thread_group.h"

namespace chorus {
namespace {

using transport::RemoteClaim;
using transport::RemoteRegion;

RemoteRegion regionOf(const void* address, std::size_t pieceBytes, std::size_t stride,
                      std::uint32_t pieces) {
  RemoteRegion r;
  r.address = reinterpret_cast<std::uintptr_t>(address);
  r.pieceBytes = pieceBytes;
  r.stride = stride;
  r.pieces = pieces;
  return r;
}

TEST(RegionsOverlap, StridedPiecesOnlyOverlapWhereTheyShareBytes) {
  alignas(64) static std::uint8_t memory[1024];
  // Pieces [0,16) [64,80) [128,144) against [16,64): between the pieces.
  const auto strided = regionOf(memory, 16, 64, 3);
  EXPECT_FALSE(runtime::regionsOverlap(strided, regionOf(memory + 16, 48, 48, 1)));
  EXPECT_TRUE(runtime::regionsOverlap(strided, regionOf(memory + 79, 1, 1, 1)));
  EXPECT_FALSE(runtime::regionsOverlap(strided, regionOf(memory + 80, 48, 48, 1)));
  EXPECT_TRUE(runtime::regionsOverlap(strided, regionOf(memory + 100, 8, 32, 2)));  // 132..140
  EXPECT_FALSE(runtime::regionsOverlap(strided, regionOf(memory + 144, 100, 100, 2)));
  EXPECT_FALSE(runtime::regionsOverlap(strided, regionOf(memory, 0, 0, 0)));
}

transport::FifoOptions smallFifo() {
  transport::FifoOptions options;
  options.slots = 2;
  options.slotBytes = 4096;
  options.singleCopyBytes = 1;
  return options;
}

TEST(ThreadFifoByReference, ReceiverCopiesTheSendersMemory) {
  transport::ThreadFifo fifo(smallFifo());
  std::vector<std::uint8_t> source(300);
  std::iota(source.begin(), source.end(), 0);
  ASSERT_TRUE(fifo.acceptsRemote(1));
  ASSERT_NE(fifo.trySendSlot(), nullptr);
  // Two pieces of 100 bytes, 200 bytes apart: bytes 0..99 and 200..299.
  const std::uint64_t ticket = fifo.commitRemote(regionOf(source.data(), 100, 200, 2), 7);
  EXPECT_FALSE(fifo.remoteSettled(ticket));
  transport::RecvSlot slot;
  ASSERT_TRUE(fifo.tryRecvSlot(&slot));
  EXPECT_TRUE(slot.remote);
  EXPECT_EQ(slot.bytes, 200u);
  EXPECT_EQ(slot.tag, 7u);
  ASSERT_EQ(fifo.claimRemote(&slot), RemoteClaim::read);
  EXPECT_FALSE(fifo.evictRemote(ticket)) << "a claimed message cannot be evicted";
  std::vector<std::uint8_t> got(150);
  fifo.readRemote(got.data(), 50, 150);  // bytes 50..99 of piece 0, all of piece 1
  for (std::size_t i = 0; i < 50; ++i)
    EXPECT_EQ(got[i], 50 + i);
  for (std::size_t i = 0; i < 100; ++i)
    EXPECT_EQ(got[50 + i], static_cast<std::uint8_t>(200 + i));
  fifo.releaseRecv();
  EXPECT_TRUE(fifo.remoteSettled(ticket));
  EXPECT_TRUE(fifo.evictRemote(ticket)) << "a settled message needs no eviction";
}

TEST(ThreadFifoByReference, EvictedMessageArrivesFromTheSlot) {
  transport::ThreadFifo fifo(smallFifo());
  std::vector<std::uint8_t> source(64, 5);
  ASSERT_NE(fifo.trySendSlot(), nullptr);
  const std::uint64_t ticket = fifo.commitRemote(regionOf(source.data(), 64, 64, 1), 1);
  ASSERT_TRUE(fifo.evictRemote(ticket));
  EXPECT_TRUE(fifo.remoteSettled(ticket));
  std::fill(source.begin(), source.end(), 9);  // the sender may change its memory now
  transport::RecvSlot slot;
  ASSERT_TRUE(fifo.tryRecvSlot(&slot));
  ASSERT_EQ(fifo.claimRemote(&slot), RemoteClaim::evicted);
  EXPECT_FALSE(slot.remote);
  ASSERT_NE(slot.data, nullptr);
  for (std::size_t i = 0; i < 64; ++i)
    EXPECT_EQ(slot.data[i], 5) << i;
  fifo.releaseRecv();
}

TEST(ThreadFifoByReference, LateEvictionOfAReusedSlotChangesNothing) {
  transport::ThreadFifo fifo(smallFifo());
  std::vector<std::uint8_t> first(32, 1), later(32, 2);
  transport::RecvSlot slot;
  ASSERT_NE(fifo.trySendSlot(), nullptr);
  const std::uint64_t old = fifo.commitRemote(regionOf(first.data(), 32, 32, 1), 1);
  ASSERT_TRUE(fifo.tryRecvSlot(&slot));
  ASSERT_EQ(fifo.claimRemote(&slot), RemoteClaim::read);
  fifo.releaseRecv();
  // Two more messages: the second reuses the first's slot (2 slots).
  for (int i = 0; i < 2; ++i) {
    ASSERT_NE(fifo.trySendSlot(), nullptr);
    fifo.commitRemote(regionOf(later.data(), 32, 32, 1), 2);
  }
  EXPECT_TRUE(fifo.evictRemote(old));
  ASSERT_TRUE(fifo.tryRecvSlot(&slot));
  EXPECT_EQ(fifo.claimRemote(&slot), RemoteClaim::read) << "the new message is still pending";
}

TEST(RemoteLedger, WritesWaitForUnsettledMessagesUnlessTheyEvict) {
  transport::ThreadFifo fifo(smallFifo());
  std::vector<std::uint8_t> buffer(256, 3);
  runtime::RemoteLedger ledger;
  ASSERT_NE(fifo.trySendSlot(), nullptr);
  const auto sent = regionOf(buffer.data(), 128, 128, 1);
  ledger.add(fifo, fifo.commitRemote(sent, 1), sent);
  EXPECT_FALSE(ledger.empty());
  EXPECT_TRUE(ledger.clearForWrite(regionOf(buffer.data() + 128, 128, 128, 1), false))
      << "a write elsewhere is not held up";
  EXPECT_FALSE(ledger.clearForWrite(regionOf(buffer.data() + 64, 8, 8, 1), false));
  EXPECT_FALSE(ledger.settle());
  EXPECT_TRUE(ledger.clearForWrite(regionOf(buffer.data() + 64, 8, 8, 1), true));
  EXPECT_EQ(ledger.evictions(), 1u);
  EXPECT_TRUE(ledger.empty());
  transport::RecvSlot slot;
  ASSERT_TRUE(fifo.tryRecvSlot(&slot));
  ASSERT_EQ(fifo.claimRemote(&slot), RemoteClaim::evicted);
  EXPECT_EQ(slot.data[0], 3);
}

TEST(StreamCopy, MatchesMemcpyAtOddOffsetsAndSizes) {
  std::vector<std::uint8_t> source(70'000), target(70'100);
  std::iota(source.begin(), source.end(), 0);
  for (std::size_t offset : {0, 1, 13, 63, 64})
    for (std::size_t bytes : {0, 1, 63, 4095, 4096, 4097, 65'537}) {
      std::fill(target.begin(), target.end(), 0xee);
      runtime::streamCopy(target.data() + offset, source.data() + 3, bytes);
      for (std::size_t i = 0; i < target.size(); ++i) {
        const bool inside = i >= offset && i < offset + bytes;
        ASSERT_EQ(target[i], inside ? source[3 + i - offset] : 0xee)
            << "offset " << offset << " bytes " << bytes << " at " << i;
      }
    }
}

TEST(StreamReduce, MatchesReduceElementsAndAllowsDstEqualA) {
  for (std::size_t count : {1, 1000, 2048, 5001}) {
    std::vector<float> a(count + 1), b(count + 1), want(count + 1), got(count + 1);
    for (std::size_t i = 0; i <= count; ++i) {
      a[i] = static_cast<float>(i % 97) * 0.5f;
      b[i] = static_cast<float>(i % 31);
    }
    runtime::reduceElements(runtime::DataType::float32, runtime::ReduceOp::max, want.data() + 1,
                            a.data() + 1, b.data() + 1, count);
    runtime::streamReduce(runtime::DataType::float32, runtime::ReduceOp::max, got.data() + 1,
                          a.data() + 1, b.data() + 1, count);
    for (std::size_t i = 1; i <= count; ++i)
      ASSERT_EQ(got[i], want[i]) << count << " at " << i;
    runtime::streamReduce(runtime::DataType::float32, runtime::ReduceOp::max, a.data() + 1,
                          a.data() + 1, b.data() + 1, count);
    for (std::size_t i = 1; i <= count; ++i)
      ASSERT_EQ(a[i], want[i]) << "dst == a, " << count << " at " << i;
  }
}

TEST(StreamingPolicy, WorkingSetCountsBothBuffersOfEveryRankUnlessTheyOverlap) {
  EXPECT_EQ(runtime::callWorkingSetBytes(8 << 20, 16 << 20, /*overlapping=*/false, 2),
            std::size_t{48} << 20);
  EXPECT_EQ(runtime::callWorkingSetBytes(8 << 20, 16 << 20, /*overlapping=*/true, 2),
            std::size_t{32} << 20);
  EXPECT_EQ(runtime::callWorkingSetBytes(100, 0, false, 0), 100u);  // no ranks counts as one
}

TEST(StreamingPolicy, ReductionsStreamFromAFourMiBCallDataMovesByWorkingSet) {
  const std::size_t mib = std::size_t{1} << 20;
  const std::size_t threshold = 100 * mib;
  // A 4 MiB in-place AllReduce on 4 ranks: 16 MiB of working set, but it reduces.
  EXPECT_TRUE(runtime::callStreams(4 * mib, 4 * mib, true, 4, /*reduces=*/true, threshold));
  EXPECT_FALSE(runtime::callStreams(4 * mib - 1, 4 * mib - 1, true, 4, true, threshold));
  // The same buffers moved without reducing stay cached until the working set reaches it.
  EXPECT_FALSE(runtime::callStreams(4 * mib, 4 * mib, true, 4, /*reduces=*/false, threshold));
  EXPECT_TRUE(runtime::callStreams(25 * mib, 25 * mib, true, 4, false, threshold));
  // Tests force either way: 1 streams everything, 0 nothing.
  EXPECT_TRUE(runtime::callStreams(64, 64, false, 2, true, 1));
  EXPECT_TRUE(runtime::callStreams(64, 64, false, 2, false, 1));
  EXPECT_FALSE(runtime::callStreams(1 << 30, 1 << 30, false, 2, true, 0));
  EXPECT_FALSE(runtime::callStreams(1 << 30, 1 << 30, false, 2, false, 0));
}

TEST(StreamingPolicy, DefaultThresholdIsAThirdOfTheLastLevelCache) {
  long cache = sysconf(_SC_LEVEL3_CACHE_SIZE);
  if (cache <= 0) cache = sysconf(_SC_LEVEL2_CACHE_SIZE);
  const std::size_t want = cache > 0 ? static_cast<std::size_t>(cache) / 3 : std::size_t{12} << 20;
  EXPECT_EQ(runtime::defaultStreamingWorkingSetBytes(), want);
}

enum class Path { byReference, streamed, tcpByReference };

struct CollectiveCase {
  const char* algorithm;
  ir::CollectiveKind kind;
  bool inPlace;
};

// Runs `c` on 3 thread ranks (each its own tcp view of the group for tcpByReference) with buffers
// one element past an allocation (not page or even cache-line aligned) and an odd count, on `path`,
// and checks every element. Rank r's input holds r * 10000 + i at element i; sums and gathers of
// those are exact in float.
void runAtOddOffsets(const CollectiveCase& c, Path path) {
  constexpr int kRanks = 3;
  const auto a = testing_support::compileForTest(c.algorithm, kRanks);
  // Over tcp, blocks of 288 KB and 64 KiB slots, so posted payloads are also read from the
  // socket straight into the buffer (not only through the transport's staging buffer).
  const bool overTcp = path == Path::tcpByReference;
  const std::size_t count = 2 * 3 * (overTcp ? 12001 : 1201) + 1;
  const bool gathers = c.kind == ir::CollectiveKind::allgather;
  const bool allToAll = c.kind == ir::CollectiveKind::alltoall;
  const std::size_t inElems = allToAll ? kRanks * count : count;
  const std::size_t outElems = gathers || allToAll ? kRanks * count : count;
  std::vector<std::vector<float>> in(kRanks, std::vector<float>(inElems + 1)),
      out(kRanks, std::vector<float>(outElems + 1, -1));
  for (int r = 0; r < kRanks; ++r)
    for (std::size_t i = 0; i < inElems; ++i)
      in[r][i + 1] = static_cast<float>(r * 10000 + i % 9973);
  const auto original = in;
  transport::FifoOptions fifo{8, overTcp ? std::size_t{64} << 10 : 4096};
  fifo.singleCopyBytes = path == Path::streamed ? 0 : 1;
  transport::ThreadGroup group(kRanks, fifo);
  transport::InMemoryStore store;
  transport::TcpOptions tcp;
  tcp.fifo = fifo;
  tcp.groupId = std::string("odd-") + c.algorithm + (c.inPlace ? "-ip" : "");
  std::vector<std::thread> threads;
  std::vector<std::string> errors(kRanks);
  for (int r = 0; r < kRanks; ++r)
    threads.emplace_back([&, r] {
      std::unique_ptr<transport::ConnectionSet> tcpView;
      if (path == Path::tcpByReference) try {
          tcpView = transport::connectTcp(store, r, kRanks, tcp);
        } catch (const std::exception& e) {
          errors[static_cast<std::size_t>(r)] = e.what();
          return;
        }
      float* output = out[r].data() + 1;
      if (c.inPlace) {  // the input is the rank's block of the output (AllGather) or all of it
        const std::size_t at = gathers ? r * count : 0;
        std::memcpy(output + at, in[r].data() + 1, inElems * sizeof(float));
      }
      runtime::CollectiveArgs args;
      args.input = c.inPlace ? output + (gathers ? r * count : 0) : in[r].data() + 1;
      args.output = output;
      args.count = count;
      runtime::ExecOptions options;
      options.alwaysByReference = path == Path::byReference;
      options.streamingWorkingSetBytes = path == Path::streamed ? 1 : 0;
      try {
        runtime::executeRank(a, r, args, tcpView ? *tcpView : group.rank(r), options);
      } catch (const std::exception& e) {
        errors[static_cast<std::size_t>(r)] = e.what();
      }
    });
  for (auto& t : threads)
    t.join();
  for (int r = 0; r < kRanks; ++r) {
    ASSERT_EQ(errors[static_cast<std::size_t>(r)], "") << "rank " << r;
    if (!c.inPlace) {
      EXPECT_EQ(in[r], original[r]) << "rank " << r << "'s input changed";
    }
    for (std::size_t i = 0; i < outElems; ++i) {
      float want = 0;
      if (gathers) {
        want = static_cast<float>((i / count) * 10000 + (i % count) % 9973);
      } else if (allToAll) {  // block b of rank r's output is block r of rank b's input
        const std::size_t b = i / count, k = r * count + i % count;
        want = static_cast<float>(b * 10000 + k % 9973);
      } else {
        for (int p = 0; p < kRanks; ++p)
          want += static_cast<float>(p * 10000 + i % 9973);
      }
      ASSERT_EQ(out[r][i + 1], want)
          << c.algorithm << (c.inPlace ? " in place" : "") << " rank " << r << " [" << i << "]";
    }
    EXPECT_EQ(out[r][0], -1.0f) << "wrote before the output";
  }
}

class OddOffsets : public ::testing::TestWithParam<std::tuple<CollectiveCase, Path>> {};

TEST_P(OddOffsets, EveryElementExact) {
  runAtOddOffsets(std::get<0>(GetParam()), std::get<1>(GetParam()));
}

INSTANTIATE_TEST_SUITE_P(
    Collectives, OddOffsets,
    ::testing::Combine(
        ::testing::Values(CollectiveCase{"allgather.ring", ir::CollectiveKind::allgather, false},
                          CollectiveCase{"allgather.ring", ir::CollectiveKind::allgather, true},
                          CollectiveCase{"allgather.direct", ir::CollectiveKind::allgather, false},
                          CollectiveCase{"alltoall.direct", ir::CollectiveKind::alltoall, false},
                          CollectiveCase{"alltoall.bruck", ir::CollectiveKind::alltoall, false},
                          CollectiveCase{"alltoall.direct", ir::CollectiveKind::alltoall, true},
                          CollectiveCase{"alltoall.bruck", ir::CollectiveKind::alltoall, true},
                          CollectiveCase{"allreduce.ring", ir::CollectiveKind::allreduce, false},
                          CollectiveCase{"allreduce.ring", ir::CollectiveKind::allreduce, true},
                          CollectiveCase{"allreduce.recursive-doubling",
                                         ir::CollectiveKind::allreduce, false}),
        ::testing::Values(Path::byReference, Path::streamed, Path::tcpByReference)),
    [](const auto& info) {
      const CollectiveCase& c = std::get<0>(info.param);
      const Path path = std::get<1>(info.param);
      std::string name = std::string(c.algorithm) + (c.inPlace ? "_inplace" : "") +
                         (path == Path::byReference ? "_byref"
                          : path == Path::streamed  ? "_streamed"
                                                    : "_tcp_byref");
      for (char& ch : name)
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
      return name;
    });

}  // namespace
}  // namespace chorus
