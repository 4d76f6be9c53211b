#include "runtime/one_sided_runner.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "ir/collective.h"
#include "ir/step_endpoints.h"
#include "runtime/collective_args.h"
#include "runtime/reduce_kernels.h"
#include "support/error.h"

namespace chorus::runtime {

namespace {

using Clock = std::chrono::steady_clock;

// "rank 1 tb 0 step 3 (wait for rank 0 on channel 0)".
std::string stepText(int rank, int tb, int step, const ir::Step& s) {
  std::string what(ir::opName(s.op));
  if (ir::opTakesStepPeer(s.op)) what += fmt::format(" with rank {}", s.peer);
  if (s.channel >= 0)
    what += fmt::format(" on {} {}",
                        s.op == ir::OpKind::barrier                            ? "barrier"
                        : ir::opIsOneSided(s.op) && !ir::opTakesStepPeer(s.op) ? "semaphore"
                                                                               : "channel",
                        s.channel);
  return fmt::format("rank {} tb {} step {} ({})", rank, tb, step, what);
}

// A barrier of one rank: the threadblocks that reach it join in generations of `count`.
struct Barrier {
  std::mutex mutex;
  std::condition_variable changed;
  int arrived = 0;
  std::uint64_t generation = 0;
};

class OneSidedRun {
 public:
  OneSidedRun(const ir::Algorithm& algorithm, const RunOptions& options,
              std::vector<std::unique_ptr<RankBuffers>>& buffers)
      : a_(algorithm), options_(options), buffers_(buffers) {
    esz_ = dataTypeSize(options.type);
    q_ = ir::chunksPerBlock(algorithm);
    chunkElems_ = (options.count + q_ - 1) / q_;
    const auto n = static_cast<std::size_t>(algorithm.nranks);
    scratch_.resize(n);
    tokens_.resize(n);
    taken_.resize(n);
    semaphores_.resize(n);
    barriers_.resize(n);
    pairs_ = ir::pairChannels(algorithm);
    for (const auto& program : algorithm.ranks) {
      const auto r = static_cast<std::size_t>(program.rank);
      scratch_[r].assign(static_cast<std::size_t>(program.scratchChunks) * chunkElems_ * esz_, 0);
      tokens_[r] = std::make_unique<std::atomic<std::uint64_t>[]>(program.channels.size());
      taken_[r] = std::make_unique<std::atomic<std::uint64_t>[]>(program.channels.size());
      semaphores_[r] = std::make_unique<std::atomic<std::int64_t>[]>(program.semaphores.size());
      for (std::size_t s = 0; s < program.semaphores.size(); ++s)
        semaphores_[r][s].store(program.semaphores[s]);
    }
  }

  // Runs every threadblock on its own thread; rethrows the first failure's cause.
  void run() {
    std::vector<std::thread> threads;
    std::vector<std::exception_ptr> errors;
    std::mutex errorsMutex;
    deadline_ = Clock::now() + options_.timeout;
    for (const auto& program : a_.ranks)
      for (const auto& tb : program.threadblocks)
        threads.emplace_back([&, rank = program.rank, id = tb.id] {
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
    for (auto& e : errors) {
      try {
        std::rethrow_exception(e);
      } catch (const CommError&) {
        continue;
      } catch (...) {
        throw;
      }
    }
    if (!errors.empty()) std::rethrow_exception(errors.front());
  }

 private:
  // Where chunk `index` of `buffer` lies on `rank`, and how many elements it holds.
  std::pair<std::uint8_t*, std::size_t> chunk(int rank, ir::BufferKind buffer, int index) {
    const auto r = static_cast<std::size_t>(rank);
    if (buffer == ir::BufferKind::scratch)
      return {scratch_[r].data() + static_cast<std::size_t>(index) * chunkElems_ * esz_,
              chunkElems_};
    std::uint8_t* base = buffer == ir::BufferKind::input
                             ? static_cast<std::uint8_t*>(const_cast<void*>(buffers_[r]->input()))
                             : static_cast<std::uint8_t*>(buffers_[r]->output());
    const std::size_t block = static_cast<std::size_t>(index) / q_;
    const std::size_t within = static_cast<std::size_t>(index) % q_ * chunkElems_;
    const std::size_t elems =
        within >= options_.count ? 0 : std::min(chunkElems_, options_.count - within);
    return {base + (block * options_.count + within) * esz_, elems};
  }

  // Spins (yielding) until `ready` holds; throws TimeoutError past the deadline, CommError
  // when another threadblock failed.
  template <typename Ready>
  void waitUntil(Ready ready, int rank, int tb, int step, const ir::Step& s,
                 const std::string& what) {
    for (std::uint64_t spins = 0; !ready(); ++spins) {
      if (failed_.load(std::memory_order_relaxed))
        throw CommError(
            fmt::format("{} stopped: another threadblock failed", stepText(rank, tb, step, s)));
      if (spins % 256 == 255 && Clock::now() > deadline_)
        throw TimeoutError(
            fmt::format("{} waited {:.0f} s for {}; the plan deadlocks ('chorus verify' says why)",
                        stepText(rank, tb, step, s),
                        std::chrono::duration<double>(options_.timeout).count(), what));
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
          tokens_[static_cast<std::size_t>(s.peer)][static_cast<std::size_t>(paired)].fetch_add(
              1, std::memory_order_release);
          break;
        }
        case ir::OpKind::wait:
        case ir::OpKind::relaxedWait: {
          const auto c = static_cast<std::size_t>(s.channel);
          const std::uint64_t ticket = taken_[r][c].fetch_add(1, std::memory_order_relaxed);
          waitUntil([&] { return tokens_[r][c].load(std::memory_order_acquire) > ticket; }, rank,
                    id, si, s, fmt::format("signal number {} from rank {}", ticket + 1, s.peer));
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
          moveData(rank, s);
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

  // copy, reduce, put, get, getReduce: chunk by chunk between the two ranks' memory.
  void moveData(int rank, const ir::Step& s) {
    const int srcRank = ir::opRemoteOperand(s.op) == ir::RemoteOperand::src ? s.peer : rank;
    const int dstRank = ir::opRemoteOperand(s.op) == ir::RemoteOperand::dst ? s.peer : rank;
    for (int i = 0; i < s.count; ++i) {
      const auto [src, srcElems] = chunk(srcRank, s.srcBuffer, s.srcIndex + i);
      const auto [dst, dstElems] = chunk(dstRank, s.dstBuffer, s.dstIndex + i);
      const std::size_t elems = std::min(srcElems, dstElems);
      if (ir::opReadsDst(s.op))
        reduceElements(options_.type, options_.op, dst, dst, src, elems);
      else if (src != dst)
        std::memmove(dst, src, elems * esz_);
    }
  }

  const ir::Algorithm& a_;
  const RunOptions& options_;
  std::vector<std::unique_ptr<RankBuffers>>& buffers_;
  std::size_t esz_ = 0, q_ = 1, chunkElems_ = 0;
  std::vector<std::vector<std::uint8_t>> scratch_;
  std::vector<std::unique_ptr<std::atomic<std::uint64_t>[]>> tokens_, taken_;
  std::vector<std::unique_ptr<std::atomic<std::int64_t>[]>> semaphores_;
  std::vector<std::vector<int>> pairs_;
  std::mutex barriersMutex_;
  std::vector<std::map<int, std::unique_ptr<Barrier>>> barriers_;
  std::atomic<bool> failed_{false};
  Clock::time_point deadline_;
};

// What the runner needs of the plan's structure; the verifier's message is longer.
void requireRunnable(const ir::Algorithm& algorithm) {
  const auto collective = ir::collectiveOf(algorithm);
  for (const auto& program : algorithm.ranks)
    for (const auto& tb : program.threadblocks)
      for (std::size_t i = 0; i < tb.steps.size(); ++i) {
        const ir::Step& s = tb.steps[i];
        const std::string where = stepText(program.rank, tb.id, static_cast<int>(i), s);
        auto fail = [&](const std::string& why) {
          throw PlanError(
              fmt::format("plan '{}' cannot be run: {} {}; 'chorus verify' reports "
                          "every such step",
                          algorithm.name, where, why));
        };
        if (!ir::opIsOneSided(s.op) && s.op != ir::OpKind::copy && s.op != ir::OpKind::reduce &&
            s.op != ir::OpKind::nop)
          fail("is a two-sided op in a one-sided plan");
        if (std::string issue =
                ir::stepEndpointIssue(program, tb.id, static_cast<int>(i), algorithm.nranks);
            !issue.empty())
          fail("names a wrong peer or channel (" + issue + ")");
        const bool onChannel = s.op == ir::OpKind::signal || s.op == ir::OpKind::wait ||
                               s.op == ir::OpKind::relaxedSignal ||
                               s.op == ir::OpKind::relaxedWait || s.op == ir::OpKind::flush;
        if ((onChannel || s.channel >= 0) && ir::opTakesStepPeer(s.op) &&
            (s.channel < 0 || s.channel >= static_cast<int>(program.channels.size()) ||
             program.channels[static_cast<std::size_t>(s.channel)].peer != s.peer))
          fail("names a channel its rank does not declare to that peer");
        if ((s.op == ir::OpKind::semAcquire || s.op == ir::OpKind::semRelease) &&
            s.channel >= static_cast<int>(program.semaphores.size()))
          fail("names a semaphore its rank does not declare");
        if (s.op == ir::OpKind::barrier &&
            (s.count < 1 || s.count > static_cast<int>(program.threadblocks.size())))
          fail("joins more threadblocks than its rank has");
        if (ir::opMovesNoData(s.op)) continue;
        auto inRange = [&](int owner, ir::BufferKind buffer, int index) {
          const int limit = buffer == ir::BufferKind::input ? collective->inputChunks(owner)
                            : buffer == ir::BufferKind::output
                                ? collective->outputChunks(owner)
                                : algorithm.ranks[static_cast<std::size_t>(owner)].scratchChunks;
          return s.count >= 1 && index >= 0 && index + s.count <= limit;
        };
        const int srcRank =
            ir::opRemoteOperand(s.op) == ir::RemoteOperand::src ? s.peer : program.rank;
        const int dstRank =
            ir::opRemoteOperand(s.op) == ir::RemoteOperand::dst ? s.peer : program.rank;
        if (!inRange(srcRank, s.srcBuffer, s.srcIndex) ||
            !inRange(dstRank, s.dstBuffer, s.dstIndex))
          fail("moves chunks outside a buffer");
      }
}

}  // namespace

RunReport runOneSidedOnThreads(const ir::Algorithm& algorithm, const RunOptions& options,
                               std::vector<std::vector<std::uint8_t>>* outputs) {
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
  if (static_cast<int>(algorithm.ranks.size()) != algorithm.nranks)
    throw PlanError(fmt::format("plan '{}' declares {} ranks but has {} rank programs",
                                algorithm.name, algorithm.nranks, algorithm.ranks.size()));
  for (std::size_t r = 0; r < algorithm.ranks.size(); ++r)
    if (algorithm.ranks[r].rank != static_cast<int>(r))
      throw PlanError(fmt::format("plan '{}': rank program {} says it is rank {}", algorithm.name,
                                  r, algorithm.ranks[r].rank));
  requireRunnable(algorithm);
  const int n = algorithm.nranks;
  std::vector<std::unique_ptr<RankBuffers>> buffers;
  for (int r = 0; r < n; ++r)
    buffers.push_back(std::make_unique<RankBuffers>(algorithm, r, options));
  RunReport report;
  for (int iteration = 0; iteration < std::max(1, options.iterations); ++iteration) {
    for (auto& b : buffers)
      b->reset();
    OneSidedRun run(algorithm, options, buffers);
    const auto start = Clock::now();
    run.run();
    report.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  }
  checkThreadRanks(algorithm, options, buffers, &report, outputs);
  return report;
}

}  // namespace chorus::runtime
