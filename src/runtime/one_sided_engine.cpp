#include "runtime/one_sided_engine.h"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <map>
#include <mutex>
#include <new>
#include <thread>
#include <tuple>

#include <fmt/format.h>

#include "ir/collective.h"
#include "ir/one_sided_structure.h"
#include "ir/step_endpoints.h"
#include "runtime/reduce_kernels.h"
#include "support/error.h"

namespace chorus::runtime {

namespace {

using Clock = std::chrono::steady_clock;

// Region parts start on cache lines (the atomics need 8 bytes; lines keep ranks' token counts
// and packet flags from sharing one).
constexpr std::size_t kRegionAlignment = 64;

std::size_t alignUp(std::size_t value) {
  return (value + kRegionAlignment - 1) / kRegionAlignment * kRegionAlignment;
}

}  // namespace

namespace one_sided_detail {

// Where a rank's chunks lie in its memory (the layout every rank shares).
struct ChunkAddressing {
  std::size_t esz = 0, q = 1, chunkElems = 0, count = 0;
  ChunkAddressing(const ir::Algorithm& algorithm, const RunOptions& options)
      : esz(dataTypeSize(options.type)),
        q(ir::chunksPerBlock(algorithm)),
        chunkElems((options.count + q - 1) / q),
        count(options.count) {}

  // Elements of chunk `index` of `buffer` (the last chunks of a block may be short or empty).
  std::size_t elements(ir::BufferKind buffer, int index) const {
    if (buffer == ir::BufferKind::scratch) return chunkElems;
    const std::size_t within = static_cast<std::size_t>(index) % q * chunkElems;
    return within >= count ? 0 : std::min(chunkElems, count - within);
  }
  // Where chunk `index` of `buffer` lies in `m`, and how many elements it holds.
  std::pair<std::uint8_t*, std::size_t> plain(const OneSidedRankMemory& m, ir::BufferKind buffer,
                                              int index) const {
    if (buffer == ir::BufferKind::scratch)
      return {m.scratch + static_cast<std::size_t>(index) * chunkElems * esz, chunkElems};
    std::uint8_t* base = buffer == ir::BufferKind::input ? m.input : m.output;
    const std::size_t block = static_cast<std::size_t>(index) / q;
    const std::size_t within = static_cast<std::size_t>(index) % q * chunkElems;
    return {base + (block * count + within) * esz, elements(buffer, index)};
  }
  // The packets of chunk `index`: its values, its flags, and as many elements as its plain
  // chunk holds.
  struct Packets {
    std::uint8_t* data;
    std::atomic<std::uint32_t>* flags;
    std::size_t elems;
  };
  Packets packets(const OneSidedRankMemory& m, ir::BufferKind buffer, int index) const {
    const auto b = static_cast<std::size_t>(buffer);
    const std::size_t first = static_cast<std::size_t>(index) * chunkElems;
    return {m.packetData[b] + first * esz, m.packetFlags[b] + first, elements(buffer, index)};
  }
};

}  // namespace one_sided_detail

using one_sided_detail::ChunkAddressing;

namespace {

// "rank 1 tb 0 step 3 (wait for rank 0 on channel 0)".
std::string stepText(int rank, int tb, int step, const ir::Step& s) {
  std::string what(ir::opName(s.op));
  if (ir::opTakesStepPeer(s.op)) what += fmt::format(" with rank {}", s.peer);
  if (s.channel >= 0) {
    const char* object = "channel";
    if (s.op == ir::OpKind::barrier) object = "barrier";
    if (s.op == ir::OpKind::semAcquire || s.op == ir::OpKind::semRelease) object = "semaphore";
    what += fmt::format(" on {} {}", object, s.channel);
  }
  return fmt::format("rank {} tb {} step {} ({})", rank, tb, step, what);
}

}  // namespace

OneSidedRegion oneSidedRegion(const ir::Algorithm& algorithm, int rank, const RunOptions& options,
                              std::size_t mirrorBytes) {
  const std::size_t esz = dataTypeSize(options.type);
  const std::size_t q = ir::chunksPerBlock(algorithm);
  const std::size_t chunkElems = (options.count + q - 1) / q;
  const auto collective = ir::collectiveOf(algorithm);
  const ir::RankProgram& program = algorithm.ranks[static_cast<std::size_t>(rank)];
  OneSidedRegion region;
  // Which of this rank's buffers some step (of any rank) reads or writes as packets.
  for (const auto& other : algorithm.ranks)
    for (const auto& tb : other.threadblocks)
      for (const auto& step : tb.steps) {
        if (step.srcPackets && ir::srcOwner(other.rank, step) == rank)
          region.hasPackets[static_cast<std::size_t>(step.srcBuffer)] = true;
        if (step.dstPackets && ir::dstOwner(other.rank, step) == rank)
          region.hasPackets[static_cast<std::size_t>(step.dstBuffer)] = true;
      }
  std::size_t at = 0;
  region.tokens = at;
  region.tokenCount = program.channels.size();
  at = alignUp(at + region.tokenCount * sizeof(std::atomic<std::uint64_t>));
  for (std::size_t b = 0; b < 3; ++b) {
    if (!region.hasPackets[b]) continue;
    region.packetElements[b] = static_cast<std::size_t>(ir::oneSidedBufferChunks(
                                   algorithm, *collective, rank, static_cast<ir::BufferKind>(b))) *
                               chunkElems;
    region.packetFlags[b] = at;
    at = alignUp(at + region.packetElements[b] * sizeof(std::atomic<std::uint32_t>));
  }
  for (std::size_t b = 0; b < 3; ++b) {
    if (!region.hasPackets[b]) continue;
    region.packetData[b] = at;
    at = alignUp(at + region.packetElements[b] * esz);
  }
  region.scratch = at;
  at = alignUp(at + static_cast<std::size_t>(program.scratchChunks) * chunkElems * esz);
  region.mirror = at;
  region.bytes = std::max<std::size_t>(at + mirrorBytes, 1);
  return region;
}

OneSidedRankMemory oneSidedMemoryAt(std::uint8_t* base, const OneSidedRegion& region,
                                    std::uint8_t* input, std::uint8_t* output) {
  OneSidedRankMemory memory;
  memory.input = input;
  memory.output = output;
  memory.scratch = base + region.scratch;
  memory.tokens = reinterpret_cast<std::atomic<std::uint64_t>*>(base + region.tokens);
  for (std::size_t b = 0; b < 3; ++b) {
    if (!region.hasPackets[b]) continue;
    memory.packetData[b] = base + region.packetData[b];
    memory.packetFlags[b] =
        reinterpret_cast<std::atomic<std::uint32_t>*>(base + region.packetFlags[b]);
  }
  return memory;
}

OneSidedRankMemory oneSidedMemoryAt(std::uint8_t* base, const OneSidedRegion& region,
                                    RankBuffers& buffers) {
  return oneSidedMemoryAt(base, region,
                          static_cast<std::uint8_t*>(const_cast<void*>(buffers.input())),
                          static_cast<std::uint8_t*>(buffers.output()));
}

void resetOneSidedRegion(std::uint8_t* base, const OneSidedRegion& region) {
  std::memset(base, 0, region.mirror);
  auto* tokens = base + region.tokens;
  for (std::size_t c = 0; c < region.tokenCount; ++c)
    new (tokens + c * sizeof(std::atomic<std::uint64_t>)) std::atomic<std::uint64_t>(0);
  for (std::size_t b = 0; b < 3; ++b) {
    auto* flags = base + region.packetFlags[b];
    for (std::size_t e = 0; e < region.packetElements[b]; ++e)
      new (flags + e * sizeof(std::atomic<std::uint32_t>)) std::atomic<std::uint32_t>(0);
  }
}

class OneSidedExecution::Impl {
 public:
  // A barrier of one rank: the threadblocks that reach it join in generations of `count`.
  struct Barrier {
    std::mutex mutex;
    std::condition_variable changed;
    int arrived = 0;
    std::uint64_t generation = 0;
  };

  Impl(const ir::Algorithm& algorithm, const RunOptions& options,
       std::vector<OneSidedRankMemory> memory, std::vector<int> localRanks,
       std::function<std::string()> failed, OneSidedPortLink* link)
      : a_(algorithm),
        options_(options),
        memory_(std::move(memory)),
        localRanks_(std::move(localRanks)),
        externalFailure_(std::move(failed)),
        link_(link),
        at_(algorithm, options) {
    const auto n = static_cast<std::size_t>(algorithm.nranks);
    taken_.resize(n);
    semaphores_.resize(n);
    barriers_.resize(n);
    pairs_ = ir::pairChannels(algorithm);
    for (int rank : localRanks_) {
      const auto r = static_cast<std::size_t>(rank);
      const ir::RankProgram& program = algorithm.ranks[r];
      taken_[r] = std::make_unique<std::atomic<std::uint64_t>[]>(program.channels.size());
      semaphores_[r] = std::make_unique<std::atomic<std::int64_t>[]>(program.semaphores.size());
      for (std::size_t s = 0; s < program.semaphores.size(); ++s)
        semaphores_[r][s].store(program.semaphores[s]);
    }
  }

  // Runs every local threadblock on its own thread; rethrows the first failure's cause.
  void run() {
    std::vector<std::thread> threads;
    std::vector<std::exception_ptr> errors;
    std::mutex errorsMutex;
    deadline_ = Clock::now() + options_.timeout;
    for (int rank : localRanks_)
      for (const auto& tb : a_.ranks[static_cast<std::size_t>(rank)].threadblocks)
        threads.emplace_back([&, rank, id = tb.id] {
          try {
            runThreadblock(rank, id);
          } catch (...) {
            failed_.store(true);
            {
              const std::lock_guard<std::mutex> lock(errorsMutex);
              errors.push_back(std::current_exception());
            }
            wakeBarriers();  // their waiters then see the failure
          }
        });
    for (auto& t : threads)
      t.join();
    // The root cause first: a timeout or a plan error rather than the aborts it caused.
    rethrowRootCause(errors);
  }

 private:
  std::pair<std::uint8_t*, std::size_t> chunk(int rank, ir::BufferKind buffer, int index) const {
    return at_.plain(memory_[static_cast<std::size_t>(rank)], buffer, index);
  }
  using PacketChunk = ChunkAddressing::Packets;
  PacketChunk packetChunk(int rank, ir::BufferKind buffer, int index) const {
    return at_.packets(memory_[static_cast<std::size_t>(rank)], buffer, index);
  }

  // Why to stop waiting because something failed elsewhere; empty while nothing did.
  std::string failureElsewhere() const {
    if (failed_.load(std::memory_order_relaxed)) return "another threadblock failed";
    if (externalFailure_) return externalFailure_();
    return {};
  }

  // Spins (yielding) until `ready` holds; throws TimeoutError past the deadline, CommError
  // when another threadblock (or rank) failed.
  template <typename Ready>
  void waitUntil(Ready ready, int rank, int tb, int step, const ir::Step& s,
                 const std::string& what) {
    for (std::uint64_t spins = 0; !ready(); ++spins) {
      if (failed_.load(std::memory_order_relaxed))
        throw CommError(
            fmt::format("{} stopped: another threadblock failed", stepText(rank, tb, step, s)));
      if (spins % 256 == 255) {
        if (Clock::now() > deadline_)
          throw TimeoutError(fmt::format(
              "{} waited {:.0f} s for {}; the plan deadlocks ('chorus verify' says why)",
              stepText(rank, tb, step, s), std::chrono::duration<double>(options_.timeout).count(),
              what));
        if (std::string why = failureElsewhere(); !why.empty())
          throw CommError(fmt::format("{} stopped: {}", stepText(rank, tb, step, s), why));
      }
      std::this_thread::yield();
    }
  }

  void runThreadblock(int rank, int id) {
    const auto r = static_cast<std::size_t>(rank);
    const ir::Threadblock& tb = a_.ranks[r].threadblocks[static_cast<std::size_t>(id)];
    for (std::size_t i = 0; i < tb.steps.size(); ++i) {
      const ir::Step& s = tb.steps[i];
      const int si = static_cast<int>(i);
      switch (s.op) {
        case ir::OpKind::nop:
        case ir::OpKind::flush:  // puts are done when issued: nothing left in flight
          break;
        case ir::OpKind::signal:
        case ir::OpKind::relaxedSignal: {
          const int paired = pairs_[r][static_cast<std::size_t>(s.channel)];
          if (paired < 0)
            throw PlanError(
                fmt::format("{}: the channel has no counterpart on rank {}; 'chorus "
                            "verify' explains",
                            stepText(rank, id, si, s), s.peer));
          if (link_) {
            OneSidedWrite token;
            token.kind = OneSidedWrite::token;
            token.channel = static_cast<std::uint32_t>(paired);
            link_->send(s.peer, token, nullptr, nullptr);
          } else {
            memory_[static_cast<std::size_t>(s.peer)].tokens[paired].fetch_add(
                1, std::memory_order_release);
          }
          break;
        }
        case ir::OpKind::wait:
        case ir::OpKind::relaxedWait: {
          const auto c = static_cast<std::size_t>(s.channel);
          const std::uint64_t ticket = taken_[r][c].fetch_add(1, std::memory_order_relaxed);
          waitUntil([&] { return memory_[r].tokens[c].load(std::memory_order_acquire) > ticket; },
                    rank, id, si, s,
                    fmt::format("signal number {} from rank {}", ticket + 1, s.peer));
          break;
        }
        case ir::OpKind::semRelease:
          semaphores_[r][static_cast<std::size_t>(s.channel)].fetch_add(1,
                                                                        std::memory_order_release);
          break;
        case ir::OpKind::semAcquire: {
          auto& value = semaphores_[r][static_cast<std::size_t>(s.channel)];
          waitUntil(
              [&] {
                std::int64_t v = value.load(std::memory_order_acquire);
                return v > 0 && value.compare_exchange_weak(v, v - 1, std::memory_order_acquire);
              },
              rank, id, si, s, "a unit of the semaphore");
          break;
        }
        case ir::OpKind::barrier:
          joinBarrier(rank, id, si, s);
          break;
        default:
          moveData(rank, id, si, s);
          break;
      }
    }
  }

  void wakeBarriers() {
    const std::lock_guard<std::mutex> lock(barriersMutex_);
    for (auto& barriers : barriers_)
      for (auto& entry : barriers) {
        const std::lock_guard<std::mutex> barrierLock(entry.second->mutex);
        entry.second->changed.notify_all();
      }
  }

  void joinBarrier(int rank, int tb, int step, const ir::Step& s) {
    Barrier* barrier = nullptr;
    {
      const std::lock_guard<std::mutex> lock(barriersMutex_);
      auto& slot = barriers_[static_cast<std::size_t>(rank)][s.channel];
      if (!slot) slot = std::make_unique<Barrier>();
      barrier = slot.get();
    }
    std::unique_lock<std::mutex> lock(barrier->mutex);
    const std::uint64_t generation = barrier->generation;
    if (++barrier->arrived >= s.count) {
      barrier->arrived = 0;
      ++barrier->generation;
      barrier->changed.notify_all();
      return;
    }
    const bool passed = barrier->changed.wait_until(
        lock, deadline_, [&] { return barrier->generation != generation || failed_.load(); });
    if (barrier->generation != generation) return;
    if (!passed)
      throw TimeoutError(fmt::format(
          "{} waited {:.0f} s for {} threadblocks; the plan deadlocks ('chorus verify' says why)",
          stepText(rank, tb, step, s), std::chrono::duration<double>(options_.timeout).count(),
          s.count));
    throw CommError(
        fmt::format("{} stopped: another threadblock failed", stepText(rank, tb, step, s)));
  }

  // Spins until the first `elems` packets of chunk `i` of the step's source (on rank `owner`)
  // carry this launch's flag.
  void awaitPackets(int rank, int tb, int step, const ir::Step& s, int owner, int i,
                    const PacketChunk& packets, std::size_t elems) {
    std::size_t arrived = 0;
    waitUntil(
        [&] {
          while (arrived < elems && packets.flags[arrived].load(std::memory_order_acquire) == 1)
            ++arrived;
          return arrived == elems;
        },
        rank, tb, step, s,
        fmt::format("the packets of rank {}'s {}[{}]", owner, ir::bufferName(s.srcBuffer),
                    s.srcIndex + i));
  }

  // Chunk `i` of a put to a peer whose memory is not mapped: over the link, once a packet
  // source has arrived (as a mapped put waits for it).
  void sendPut(int rank, int tb, int step, const ir::Step& s, int i, const std::uint8_t* src,
               const PacketChunk& srcPackets, std::size_t srcElems) {
    const int index = s.dstIndex + i;
    const std::size_t dstElems = at_.elements(s.dstBuffer, index);
    const std::size_t elems = std::min(srcElems, dstElems);
    if (s.srcPackets && !s.rawPackets) awaitPackets(rank, tb, step, s, rank, i, srcPackets, elems);
    OneSidedWrite write;
    write.kind = s.rawPackets   ? OneSidedWrite::rawPackets
                 : s.dstPackets ? OneSidedWrite::packets
                                : OneSidedWrite::values;
    write.buffer = static_cast<std::uint8_t>(s.dstBuffer);
    write.chunk = static_cast<std::uint32_t>(index);
    write.elements = s.rawPackets ? std::min(srcPackets.elems, dstElems) : elems;
    write.flagThrough = s.dstPackets && !s.rawPackets ? dstElems : 0;
    link_->send(s.peer, write, src, s.rawPackets ? srcPackets.flags : nullptr);
  }

  // copy, reduce, put, get, getReduce: chunk by chunk between the two ranks' memory. A packet
  // source is read element by element once its flag is set (unless raw: then value and flag
  // are copied as they are); a packet destination gets each value, then its flag (release).
  void moveData(int rank, int tb, int step, const ir::Step& s) {
    const int srcRank = ir::srcOwner(rank, s);
    const int dstRank = ir::dstOwner(rank, s);
    for (int i = 0; i < s.count; ++i) {
      PacketChunk srcPackets{}, dstPackets{};
      std::uint8_t* src = nullptr;
      std::uint8_t* dst = nullptr;
      std::size_t srcElems = 0, dstElems = 0;
      if (s.srcPackets) {
        srcPackets = packetChunk(srcRank, s.srcBuffer, s.srcIndex + i);
        src = srcPackets.data;
        srcElems = srcPackets.elems;
      } else {
        std::tie(src, srcElems) = chunk(srcRank, s.srcBuffer, s.srcIndex + i);
      }
      if (link_ && dstRank != rank) {
        sendPut(rank, tb, step, s, i, src, srcPackets, srcElems);
        continue;
      }
      if (s.dstPackets) {
        dstPackets = packetChunk(dstRank, s.dstBuffer, s.dstIndex + i);
        dst = dstPackets.data;
        dstElems = dstPackets.elems;
      } else {
        std::tie(dst, dstElems) = chunk(dstRank, s.dstBuffer, s.dstIndex + i);
      }
      const std::size_t elems = std::min(srcElems, dstElems);
      if (s.srcPackets && !s.rawPackets)
        awaitPackets(rank, tb, step, s, srcRank, i, srcPackets, elems);
      if (ir::opReadsDst(s.op)) {
        reduceElements(options_.type, options_.op, dst, dst, src, elems);
      } else if (s.rawPackets) {
        for (std::size_t e = 0; e < std::min(srcPackets.elems, dstPackets.elems); ++e) {
          const std::uint32_t flag = srcPackets.flags[e].load(std::memory_order_acquire);
          std::memcpy(dst + e * at_.esz, src + e * at_.esz, at_.esz);
          dstPackets.flags[e].store(flag, std::memory_order_release);
        }
        continue;
      } else if (src != dst) {
        std::memmove(dst, src, elems * at_.esz);
      }
      // A chunk's packets are written whole: elements past the source's end (the last chunks
      // of a buffer whose count does not divide evenly) get their flag too, as MSCCL++'s
      // chunks of equal bytes would.
      if (s.dstPackets)
        for (std::size_t e = 0; e < dstPackets.elems; ++e)
          dstPackets.flags[e].store(1, std::memory_order_release);
    }
  }

  const ir::Algorithm& a_;
  const RunOptions& options_;
  const std::vector<OneSidedRankMemory> memory_;
  const std::vector<int> localRanks_;
  const std::function<std::string()> externalFailure_;
  OneSidedPortLink* const link_;
  const ChunkAddressing at_;
  std::vector<std::unique_ptr<std::atomic<std::uint64_t>[]>> taken_;
  std::vector<std::unique_ptr<std::atomic<std::int64_t>[]>> semaphores_;
  std::vector<std::vector<int>> pairs_;
  std::mutex barriersMutex_;
  std::vector<std::map<int, std::unique_ptr<Barrier>>> barriers_;
  std::atomic<bool> failed_{false};
  Clock::time_point deadline_;
};

OneSidedExecution::OneSidedExecution(const ir::Algorithm& algorithm, const RunOptions& options,
                                     std::vector<OneSidedRankMemory> memory,
                                     std::vector<int> localRanks,
                                     std::function<std::string()> failed, OneSidedPortLink* link)
    : impl_(std::make_unique<Impl>(algorithm, options, std::move(memory), std::move(localRanks),
                                   std::move(failed), link)) {}

OneSidedExecution::~OneSidedExecution() = default;

double OneSidedExecution::run() {
  const auto start = Clock::now();
  impl_->run();
  return std::chrono::duration<double>(Clock::now() - start).count();
}

struct OneSidedLanding::State {
  const ir::Algorithm& algorithm;
  const int rank;
  const OneSidedRankMemory memory;
  const ChunkAddressing at;
  std::array<int, 3> chunks{};  // per buffer kind: the chunks a one-sided plan may touch
};

OneSidedLanding::OneSidedLanding(const ir::Algorithm& algorithm, const RunOptions& options,
                                 int rank, const OneSidedRankMemory& memory)
    : state_(std::make_unique<State>(
          State{algorithm, rank, memory, ChunkAddressing(algorithm, options), {}})) {
  const auto collective = ir::collectiveOf(algorithm);
  for (std::size_t b = 0; b < 3; ++b)
    state_->chunks[b] =
        ir::oneSidedBufferChunks(algorithm, *collective, rank, static_cast<ir::BufferKind>(b));
}

OneSidedLanding::~OneSidedLanding() = default;

void OneSidedLanding::land(const OneSidedWrite& write, const std::uint8_t* payload,
                           std::size_t payloadBytes) const {
  const State& st = *state_;
  const auto bad = [&](const std::string& what) {
    throw CommError(
        fmt::format("rank {} received a one-sided write that does not fit plan "
                    "'{}': {}; do all ranks run the same plan and size?",
                    st.rank, st.algorithm.name, what));
  };
  const ir::RankProgram& program = st.algorithm.ranks[static_cast<std::size_t>(st.rank)];
  if (write.kind == OneSidedWrite::token) {
    if (write.channel >= program.channels.size())
      bad(fmt::format("a signal on channel {} of {}", write.channel, program.channels.size()));
    st.memory.tokens[write.channel].fetch_add(1, std::memory_order_release);
    return;
  }
  if (write.kind > OneSidedWrite::rawPackets || write.buffer > 2)
    bad(fmt::format("kind {}, buffer {}", write.kind, write.buffer));
  const auto buffer = static_cast<ir::BufferKind>(write.buffer);
  const int index = static_cast<int>(write.chunk);
  if (index >= st.chunks[write.buffer])
    bad(fmt::format("{} chunk {} of {}", ir::bufferName(buffer), index, st.chunks[write.buffer]));
  const std::size_t elems = st.at.elements(buffer, index);
  const std::size_t esz = st.at.esz;
  const bool packets = write.kind != OneSidedWrite::values;
  const std::size_t expected =
      write.elements *
      (esz + (write.kind == OneSidedWrite::rawPackets ? sizeof(std::uint32_t) : 0));
  if (write.offset + write.elements > elems || write.flagThrough > elems ||
      payloadBytes != expected)
    bad(fmt::format("elements [{}, {}) of a chunk of {}, {} payload bytes", write.offset,
                    write.offset + write.elements, elems, payloadBytes));
  if (!packets) {
    std::memcpy(st.at.plain(st.memory, buffer, index).first + write.offset * esz, payload,
                write.elements * esz);
    return;
  }
  if (!st.memory.packetFlags[write.buffer])
    bad(fmt::format("packets of {}, which no step of the plan reads", ir::bufferName(buffer)));
  const ChunkAddressing::Packets pk = st.at.packets(st.memory, buffer, index);
  std::memcpy(pk.data + write.offset * esz, payload, write.elements * esz);
  if (write.kind == OneSidedWrite::rawPackets) {
    const std::uint8_t* flags = payload + write.elements * esz;
    for (std::size_t e = 0; e < write.elements; ++e) {
      std::uint32_t flag = 0;
      std::memcpy(&flag, flags + e * sizeof(flag), sizeof(flag));
      pk.flags[write.offset + e].store(flag, std::memory_order_release);
    }
    return;
  }
  const std::size_t through =
      std::max<std::size_t>(write.offset + write.elements, write.flagThrough);
  for (std::size_t e = write.offset; e < through; ++e)
    pk.flags[e].store(1, std::memory_order_release);
}

void requirePortChannelsOnly(const ir::Algorithm& algorithm, std::string_view transport) {
  for (const auto& program : algorithm.ranks)
    for (const auto& tb : program.threadblocks)
      for (std::size_t i = 0; i < tb.steps.size(); ++i) {
        const ir::Step& s = tb.steps[i];
        const bool remote = ir::opRemoteOperand(s.op) != ir::RemoteOperand::none ||
                            s.op == ir::OpKind::signal || s.op == ir::OpKind::relaxedSignal;
        if (!remote) continue;
        const bool port =
            s.channel >= 0 &&
            program.channels[static_cast<std::size_t>(s.channel)].type == ir::ChannelType::port;
        if (port && ir::opRemoteOperand(s.op) != ir::RemoteOperand::src) continue;
        throw OptionError(fmt::format(
            "plan '{}' cannot run over --transport {}: {} reaches rank {}'s memory {}, which "
            "ranks over {} do not share (only port-channel puts and signals travel as "
            "messages); use --transport shm or thread",
            algorithm.name, transport, stepText(program.rank, tb.id, static_cast<int>(i), s),
            s.peer, port ? "with a get" : "through a memory channel", transport));
      }
}

void requireRunnableOneSided(const ir::Algorithm& algorithm, const RunOptions& options) {
  if (options.op == ReduceOp::avg)
    throw OptionError(
        fmt::format("'{}' is a one-sided plan, whose runner does not divide for "
                    "--op avg yet; use sum, prod, min or max",
                    algorithm.name));
  if (!options.givenInputs.empty())
    throw OptionError(
        fmt::format("'{}' is a one-sided plan, whose runner takes generated inputs "
                    "only for now",
                    algorithm.name));
  ir::requireOneSidedStructure(algorithm, "run");
}

}  // namespace chorus::runtime
