// Registered memory (chorus::memAlloc, chorusMemAlloc): its contract and errors, and collectives
// over shm whose buffers live in it, so peers read messages by reference through their own
// mapping of the sender's memory (ShmFifo::remoteData). Buffers start one element into an
// allocation and counts are odd; every element is checked, in place and out of place.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "chorus/chorus.h"
#include "chorus/chorus_c.h"
#include "transport/shm/registered_memory.h"

namespace chorus {
namespace {

TEST(MemAlloc, GivesZeroedPageAlignedMemoryAndTakesItBack) {
  auto* p = static_cast<std::uint8_t*>(memAlloc(10000));
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % 4096, 0u);
  for (std::size_t i = 0; i < 10000; ++i)
    ASSERT_EQ(p[i], 0) << i;
  std::memset(p, 7, 10000);
  const auto address = reinterpret_cast<std::uintptr_t>(p);
  const auto range = transport::findRegistered(address + 100, 9900);
  ASSERT_TRUE(range.has_value());
  EXPECT_EQ(range->base, address);
  EXPECT_EQ(range->bytes, 10000u);
  EXPECT_FALSE(transport::findRegistered(address + 100, 9901).has_value()) << "past the end";
  memFree(p);
  EXPECT_FALSE(transport::findRegistered(address + 100, 1).has_value()) << "after memFree";
  memFree(nullptr);
}

TEST(MemAlloc, BadCallsAreOptionErrorsThatSayWhatToDo) {
  EXPECT_THROW(memAlloc(0), OptionError);
  int onStack = 0;
  try {
    memFree(&onStack);
    FAIL() << "memFree of a stack address did not throw";
  } catch (const OptionError& e) {
    EXPECT_NE(std::string(e.what()).find("not memory from chorus::memAlloc"), std::string::npos)
        << e.what();
  }
  auto* p = static_cast<std::uint8_t*>(memAlloc(64));
  EXPECT_THROW(memFree(p + 8), OptionError) << "not the start";
  memFree(p);
  EXPECT_THROW(memFree(p), OptionError) << "twice";
}

TEST(MemAlloc, CAbiReportsResultCodes) {
  void* p = nullptr;
  ASSERT_EQ(chorusMemAlloc(&p, 4096), chorusSuccess);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(chorusMemFree(p), chorusSuccess);
  EXPECT_EQ(chorusMemFree(p), chorusInvalidArgument);
  EXPECT_EQ(chorusMemAlloc(&p, 0), chorusInvalidArgument);
  EXPECT_EQ(chorusMemAlloc(nullptr, 64), chorusInvalidArgument);
}

TEST(PeerMapping, MapsTheSameMemoryAndRefusesAStaleId) {
  auto* p = static_cast<std::uint8_t*>(memAlloc(8192));
  const auto range = transport::findRegistered(reinterpret_cast<std::uintptr_t>(p), 8192);
  ASSERT_TRUE(range.has_value());
  const auto mapping = transport::mapPeerAllocation(static_cast<int>(::getpid()), *range);
  ASSERT_NE(mapping, nullptr);
  ASSERT_NE(mapping->data(), p) << "a second mapping, not the same address";
  p[5000] = 42;
  EXPECT_EQ(mapping->data()[5000], 42) << "both map one memfd";
  transport::RegisteredRange stale = *range;
  stale.id += 1000;  // the descriptor now names another allocation
  EXPECT_EQ(transport::mapPeerAllocation(static_cast<int>(::getpid()), stale), nullptr);
  memFree(p);
  EXPECT_EQ(mapping->data()[5000], 42) << "a mapping outlives its owner's memFree";
}

TEST(PeerMapping, MappingANewAllocationDropsTheMappingsOfFreedOnes) {
  const int pid = static_cast<int>(::getpid());
  auto* first = memAlloc(4096);
  std::weak_ptr<const transport::PeerMapping> firstMapping = transport::mapPeerAllocation(
      pid, *transport::findRegistered(reinterpret_cast<std::uintptr_t>(first), 4096));
  ASSERT_FALSE(firstMapping.expired()) << "the cache keeps it";
  memFree(first);
  EXPECT_FALSE(firstMapping.expired()) << "nothing maps a new allocation yet";
  auto* second = memAlloc(4096);
  const auto secondMapping = transport::mapPeerAllocation(
      pid, *transport::findRegistered(reinterpret_cast<std::uintptr_t>(second), 4096));
  ASSERT_NE(secondMapping, nullptr);
  EXPECT_TRUE(firstMapping.expired()) << "the freed allocation is still mapped";
  memFree(second);
}

TEST(RegisteredBuffer, FallsBackToTheHeapWhenNoMemfdCanBeHad) {
  // In a child with no descriptor left: memAlloc fails with a CommError naming memfd_create,
  // and the runtime's buffers still work, on the heap.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "the sanitizers' own checks (UBSan's vptr check) need a free descriptor; the "
                  "Release run covers this";
#endif
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // The lowest free descriptor number as the soft limit: no new descriptor can be had. The
    // limit is lifted again before anything else runs (sanitizers need descriptors to report).
    rlimit saved{};
    ::getrlimit(RLIMIT_NOFILE, &saved);
    const int lowestFree = ::open("/dev/null", O_RDONLY);
    ::close(lowestFree);
    rlimit limit{static_cast<rlim_t>(lowestFree), saved.rlim_max};
    ::setrlimit(RLIMIT_NOFILE, &limit);
    std::exception_ptr failure;
    try {
      memAlloc(4096);
    } catch (...) {
      failure = std::current_exception();
    }
    transport::RegisteredBuffer buffer;
    std::uint8_t* p = buffer.reserve(100000);
    ::setrlimit(RLIMIT_NOFILE, &saved);
    int code = 0;
    if (!failure) {
      code = 1;  // memAlloc should have failed
    } else {
      try {
        std::rethrow_exception(failure);
      } catch (const CommError& e) {
        if (std::string(e.what()).find("memfd_create failed") == std::string::npos) code = 2;
      } catch (...) {
        code = 2;
      }
    }
    if (p == nullptr || reinterpret_cast<std::uintptr_t>(p) % 4096 != 0) {
      code = 3;
    } else {
      std::memset(p, 1, 100000);
      if (transport::findRegistered(reinterpret_cast<std::uintptr_t>(p), 1).has_value()) code = 4;
    }
    ::_exit(code);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: memAlloc worked, 2: wrong message, 3: no buffer, "
                                       "4: heap buffer registered";
}

TEST(RegisteredBuffer, GrowsInRegisteredMemory) {
  transport::RegisteredBuffer buffer;
  EXPECT_EQ(buffer.reserve(0), nullptr) << "nothing asked for, nothing allocated";
  std::uint8_t* small = buffer.reserve(1000);
  ASSERT_NE(small, nullptr);
  EXPECT_TRUE(transport::findRegistered(reinterpret_cast<std::uintptr_t>(small), 1000));
  EXPECT_EQ(buffer.reserve(60000), small) << "within the first 64 KiB";
  std::uint8_t* large = buffer.reserve(1 << 20);
  const auto range = transport::findRegistered(reinterpret_cast<std::uintptr_t>(large), 1 << 20);
  ASSERT_TRUE(range.has_value());
  EXPECT_EQ(range->bytes, std::uint64_t{1} << 20);
}

struct Case {
  const char* collective;
  const char* algorithm;
  bool inPlace;
  // Whether peers must have read through their mappings. An in-place AllToAll on shift
  // pairing reads its private copy of the input, which is registered memory too; on direct,
  // each tile goes through a slot before the same tile is received over it (no private copy,
  // nothing sent by reference: PlanFacts::tileOrderedInPlace).
  bool mapped = true;
  int ranks = 3;
};

// `c.ranks` ranks as threads connected over shm segments, buffers from memAlloc one element in.
void runRegistered(const Case& c) {
  const int kRanks = c.ranks;
  constexpr std::size_t kCount = 3 * 20011;  // odd; messages of about 80 KB
  const std::string coll = c.collective;
  const bool gathers = coll == "allgather", allToAll = coll == "alltoall",
             scatters = coll == "reducescatter";
  const std::size_t inElems = allToAll || scatters ? kRanks * kCount : kCount;
  const std::size_t outElems = gathers || allToAll ? kRanks * kCount : kCount;
  // In place, ReduceScatter's buffer is its whole input.
  const std::size_t outAlloc = c.inPlace && scatters ? inElems : outElems;
  CommConfig config;
  config.transport = "shm";
  config.algo = fmt::format("{}={}", coll, c.algorithm);
  auto comms = Communicator::initAll(kRanks, config);
  std::vector<float*> in(kRanks), out(kRanks), inBase(kRanks), outBase(kRanks);
  for (int r = 0; r < kRanks; ++r) {
    inBase[r] = static_cast<float*>(memAlloc((inElems + 2) * sizeof(float)));
    outBase[r] = static_cast<float*>(memAlloc((outAlloc + 2) * sizeof(float)));
    in[r] = inBase[r] + 1;
    out[r] = outBase[r] + 1;
  }
  auto fill = [&] {
    for (int r = 0; r < kRanks; ++r) {
      for (std::size_t i = 0; i < outAlloc + 2; ++i)
        outBase[r][i] = -1;
      float* input = in[r];
      if (c.inPlace) input = gathers ? out[r] + r * kCount : out[r];
      for (std::size_t i = 0; i < inElems; ++i)
        input[i] = static_cast<float>(r * 10000 + i % 9973);
    }
  };
  std::vector<std::string> errors(kRanks);
  // Each call's ranks on threads of their own.
  auto callAll = [&] {
    std::vector<std::thread> threads;
    for (int r = 0; r < kRanks; ++r)
      threads.emplace_back([&, r] {
        try {
          Communicator& comm = comms[static_cast<std::size_t>(r)];
          float* o = out[r];
          const float* i = c.inPlace ? (gathers ? o + r * kCount : o) : in[r];
          if (coll == "allreduce")
            comm.allReduce(i, o, kCount, DataType::float32, ReduceOp::sum);
          else if (gathers)
            comm.allGather(i, o, kCount, DataType::float32);
          else if (allToAll)
            comm.allToAll(i, o, kCount, DataType::float32);
          else
            comm.reduceScatter(i, c.inPlace ? o + r * kCount : o, kCount, DataType::float32,
                               ReduceOp::sum);
        } catch (const std::exception& e) {
          errors[static_cast<std::size_t>(r)] = e.what();
        }
      });
    for (auto& t : threads)
      t.join();
  };
  // A receiver proves it may read its sender's memory on its first receive, so a first call
  // may go through the slots; the checked second one reads by reference.
  fill();
  callAll();
  fill();
  const std::uint64_t mappedBefore = transport::mappedReads();
  callAll();
  for (int r = 0; r < kRanks; ++r)
    ASSERT_EQ(errors[static_cast<std::size_t>(r)], "") << "rank " << r;
  if (c.mapped) {
    EXPECT_GT(transport::mappedReads(), mappedBefore)
        << "no rank read a message through its mapping of a peer's allocation";
  }
  for (int r = 0; r < kRanks; ++r) {
    // In-place ReduceScatter leaves its result in this rank's block of the buffer.
    const float* result = c.inPlace && scatters ? out[r] + r * kCount : out[r];
    for (std::size_t i = 0; i < outElems; ++i) {
      float want = 0;
      if (gathers) {
        want = static_cast<float>((i / kCount) * 10000 + (i % kCount) % 9973);
      } else if (allToAll) {  // block b of rank r's output is block r of rank b's input
        const std::size_t b = i / kCount, k = r * kCount + i % kCount;
        want = static_cast<float>(b * 10000 + k % 9973);
      } else {
        const std::size_t k = scatters ? r * kCount + i : i;
        for (int p = 0; p < kRanks; ++p)
          want += static_cast<float>(p * 10000 + k % 9973);
      }
      ASSERT_EQ(result[i], want) << coll << "." << c.algorithm << (c.inPlace ? " in place" : "")
                                 << " rank " << r << " [" << i << "]";
    }
    EXPECT_EQ(outBase[r][0], -1.0f) << "wrote before the output";
    EXPECT_EQ(out[r][outAlloc], -1.0f) << "wrote past the output";
    if (!c.inPlace) {
      for (std::size_t i = 0; i < inElems; ++i)
        ASSERT_EQ(in[r][i], static_cast<float>(r * 10000 + i % 9973)) << "input changed";
    }
  }
  for (int r = 0; r < kRanks; ++r) {
    memFree(inBase[r]);
    memFree(outBase[r]);
  }
}

class RegisteredBuffers : public ::testing::TestWithParam<Case> {};

TEST_P(RegisteredBuffers, EveryElementExactThroughMappedPeers) {
  runRegistered(GetParam());
}

INSTANTIATE_TEST_SUITE_P(
    OnShm, RegisteredBuffers,
    ::testing::Values(Case{"allreduce", "ring", false}, Case{"allreduce", "ring", true},
                      Case{"allreduce", "recursive-doubling", false},
                      Case{"allgather", "direct", false}, Case{"allgather", "direct", true},
                      Case{"allgather", "ring", true},
                      // Steps of several chunks: messages of several pieces.
                      Case{"allgather", "recursive-doubling", false, true, 4},
                      Case{"allgather", "recursive-doubling", true, true, 4},
                      Case{"alltoall", "direct", false}, Case{"alltoall", "direct", true, false},
                      Case{"alltoall", "pairwise", true}, Case{"alltoall", "bruck", false},
                      Case{"reducescatter", "ring", false}, Case{"reducescatter", "ring", true}),
    [](const auto& info) {
      std::string name = std::string(info.param.collective) + "_" + info.param.algorithm +
                         (info.param.inPlace ? "_inplace" : "") + "_" +
                         std::to_string(info.param.ranks);
      for (char& ch : name)
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
      return name;
    });

}  // namespace
}  // namespace chorus
