#include "ir/mscclpp_pipelines.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <utility>

#include <fmt/format.h>

#include "ir/one_sided_structure.h"
#include "ir/step_endpoints.h"

namespace chorus::ir::mscclpp_reader {
namespace {

bool movesData(OpKind op) {
  return op == OpKind::copy || op == OpKind::reduce || op == OpKind::put || op == OpKind::get ||
         op == OpKind::getReduce;
}

std::string opPath(const std::vector<PipelineLoop>& loops, PipelineTag tag) {
  return fmt::format("{}.ops[{}]", loops[static_cast<std::size_t>(tag.loop)].path, tag.op);
}

// The chunks of one rank's memory an operand names, with the aliasing of in-place plans
// resolved the way a caller lays out in-place buffers (AllGather: input at output[rank * in];
// ReduceScatter: output at input[rank * out]; equal counts: the same memory).
struct Span {
  int owner = 0;
  BufferKind space = BufferKind::input;
  long long start = 0;
  long long length = 0;
  std::string path;
};

// None when the plan is in place with chunk counts that say no layout.
std::optional<Span> spanOf(const Algorithm& algorithm, int owner, BufferKind buffer, int index,
                           int count) {
  Span span{owner, buffer, index, count, {}};
  if (!algorithm.inPlace || buffer == BufferKind::scratch) return span;
  const long long in = algorithm.ranks[static_cast<std::size_t>(owner)].inputChunks;
  const long long out = algorithm.ranks[static_cast<std::size_t>(owner)].outputChunks;
  if (out == 0 || in == out) {
    span.space = BufferKind::input;
  } else if (out == in * algorithm.nranks) {
    span.space = BufferKind::output;
    if (buffer == BufferKind::input) span.start += owner * in;
  } else if (in == out * algorithm.nranks) {
    span.space = BufferKind::input;
    if (buffer == BufferKind::output) span.start += owner * out;
  } else {
    return std::nullopt;
  }
  return span;
}

std::optional<PipelineProblem> checkOperandSpans(const Algorithm& algorithm,
                                                 const std::vector<PipelineLoop>& loops,
                                                 const PipelineTags& tags) {
  std::vector<Span> spans;
  for (std::size_t r = 0; r < algorithm.ranks.size(); ++r) {
    const RankProgram& program = algorithm.ranks[r];
    for (std::size_t t = 0; t < program.threadblocks.size(); ++t) {
      const auto& steps = program.threadblocks[t].steps;
      for (std::size_t s = 0; s < steps.size(); ++s) {
        const PipelineTag tag = tags[r][t][s];
        const Step& step = steps[s];
        if (tag.loop < 0 || !movesData(step.op)) continue;
        const PipelineLoop& loop = loops[static_cast<std::size_t>(tag.loop)];
        const std::string path = opPath(loops, tag);
        if (step.count != loop.numChunks * loop.scale)
          return PipelineProblem{
              path,
              fmt::format("has operands of {} chunks in a pipeline of num_chunks {}: MSCCL++ runs "
                          "the body "
                          "over num_chunks chunks unit by unit, so an operand of another size is "
                          "moved only in part or past its end; give every operand of the body "
                          "num_chunks chunks",
                          step.count / loop.scale, loop.numChunks)};
        const int rank = static_cast<int>(r);
        for (bool source : {true, false}) {
          const int owner = source ? srcOwner(rank, step) : dstOwner(rank, step);
          std::optional<Span> span =
              source ? spanOf(algorithm, owner, step.srcBuffer, step.srcIndex, step.count)
                     : spanOf(algorithm, owner, step.dstBuffer, step.dstIndex, step.count);
          if (!span)
            return PipelineProblem{
                path,
                fmt::format("the plan is in place, but rank {}'s {} input and {} output "
                            "chunks say neither that they are one memory (equal counts) "
                            "nor where one lies in the other (one {} times the other), so "
                            "chorus cannot tell which pipelined operands meet",
                            owner, algorithm.ranks[static_cast<std::size_t>(owner)].inputChunks,
                            algorithm.ranks[static_cast<std::size_t>(owner)].outputChunks,
                            algorithm.nranks)};
          span->path = path;
          spans.push_back(std::move(*span));
        }
      }
    }
  }
  auto key = [](const Span& a) { return std::tuple(a.owner, a.space, a.start, a.length); };
  std::sort(spans.begin(), spans.end(),
            [&](const Span& a, const Span& b) { return key(a) < key(b); });
  // Sorted by start within each memory, a span meets an earlier one iff it starts before the
  // furthest end so far; equal spans are neighbours.
  long long furthest = 0;
  std::size_t widest = 0;
  for (std::size_t i = 0; i < spans.size(); ++i) {
    const Span& b = spans[i];
    const bool sameMemory = i > 0 && spans[i - 1].owner == b.owner && spans[i - 1].space == b.space;
    if (sameMemory && b.start < furthest && key(spans[i - 1]) != key(b))
      return PipelineProblem{
          b.path,
          fmt::format("an operand on rank {} overlaps one of {} without being the same chunks; "
                      "MSCCL++ runs the two unit by unit from their own starts, so one iteration "
                      "of one meets another iteration of the other, which chorus cannot read as "
                      "the body run once; give pipelined operands on the same memory the same "
                      "chunks, or none in common",
                      b.owner, spans[widest].path)};
    if (!sameMemory || b.start + b.length > furthest) {
      furthest = b.start + b.length;
      widest = i;
    }
  }
  return std::nullopt;
}

// One signal/release (producer) or wait/acquire (consumer) on a token counter.
struct SyncUse {
  bool producer = false;
  int rank = 0;
  int tb = 0;
  int loop = -1;
};

// Consecutive uses in one loop (or outside, loop -1) and how many.
struct Segment {
  int loop = -1;
  int count = 0;
};

std::vector<Segment> segmentsOf(const std::vector<SyncUse>& uses, bool producers, int initial) {
  std::vector<Segment> out;
  if (initial > 0) out.push_back({-1, initial});
  for (const SyncUse& use : uses) {
    if (use.producer != producers) continue;
    if (!out.empty() && out.back().loop == use.loop)
      ++out.back().count;
    else
      out.push_back({use.loop, 1});
  }
  return out;
}

std::string describe(const std::vector<Segment>& segments, const std::vector<PipelineLoop>& loops) {
  std::string out;
  for (const Segment& s : segments) {
    if (!out.empty()) out += ", then ";
    if (s.loop < 0)
      out += fmt::format("{} outside pipelines", s.count);
    else
      out += fmt::format("{} per iteration of {}", s.count,
                         loops[static_cast<std::size_t>(s.loop)].path);
  }
  return out.empty() ? "none" : out;
}

bool sameIterations(const PipelineLoop& a, const PipelineLoop& b) {
  return a.unitBytes == b.unitBytes && a.numChunks == b.numChunks && a.chunkBasis == b.chunkBasis;
}

std::optional<PipelineProblem> checkSyncSegments(const Algorithm& algorithm,
                                                 const std::vector<PipelineLoop>& loops,
                                                 const PipelineTags& tags) {
  const std::vector<std::vector<int>> pairs = pairChannels(algorithm);
  // (rank, 0 for a channel | 1 for a semaphore, index) -> its uses, in step order per tb.
  std::map<std::tuple<int, int, int>, std::vector<SyncUse>> uses;
  for (std::size_t r = 0; r < algorithm.ranks.size(); ++r) {
    const RankProgram& program = algorithm.ranks[r];
    for (std::size_t t = 0; t < program.threadblocks.size(); ++t) {
      const auto& steps = program.threadblocks[t].steps;
      for (std::size_t s = 0; s < steps.size(); ++s) {
        const Step& step = steps[s];
        const SyncUse use{false, static_cast<int>(r), static_cast<int>(t), tags[r][t][s].loop};
        const bool signals = step.op == OpKind::signal || step.op == OpKind::relaxedSignal;
        const bool waits = step.op == OpKind::wait || step.op == OpKind::relaxedWait;
        const bool validChannel =
            step.channel >= 0 && static_cast<std::size_t>(step.channel) < pairs[r].size();
        if (signals && validChannel && step.peer >= 0) {
          const int paired = pairs[r][static_cast<std::size_t>(step.channel)];
          if (paired >= 0)
            uses[{step.peer, 0, paired}].push_back({true, use.rank, use.tb, use.loop});
        } else if (waits && validChannel) {
          uses[{use.rank, 0, step.channel}].push_back(use);
        } else if (step.op == OpKind::semRelease || step.op == OpKind::semAcquire) {
          uses[{use.rank, 1, step.channel}].push_back(
              {step.op == OpKind::semRelease, use.rank, use.tb, use.loop});
        }
      }
    }
  }
  for (const auto& [key, list] : uses) {
    const auto [rank, isSemaphore, index] = key;
    const auto firstLoop =
        std::find_if(list.begin(), list.end(), [](const SyncUse& u) { return u.loop >= 0; });
    if (firstLoop == list.end()) continue;
    const std::string path = loops[static_cast<std::size_t>(firstLoop->loop)].path;
    const std::string what =
        isSemaphore ? fmt::format("semaphore {} of rank {}", index, rank)
                    : fmt::format("channel {} of rank {} (to rank {}) and its pair", index, rank,
                                  algorithm.ranks[static_cast<std::size_t>(rank)]
                                      .channels[static_cast<std::size_t>(index)]
                                      .peer);
    const char* given = isSemaphore ? "released" : "signalled";
    const char* taken = isSemaphore ? "acquired" : "waited on";
    const int initial = isSemaphore ? algorithm.ranks[static_cast<std::size_t>(rank)]
                                          .semaphores[static_cast<std::size_t>(index)]
                                    : 0;
    const std::vector<Segment> producers = segmentsOf(list, true, initial);
    const std::vector<Segment> consumers = segmentsOf(list, false, 0);
    // Used on one side only: no iteration meets the other side, and the verifier reports the
    // wait that starves or the tokens left over, as it would for the loop run unit by unit.
    if (producers.empty() || consumers.empty()) continue;
    for (bool producing : {true, false}) {
      const SyncUse* first = nullptr;
      for (const SyncUse& u : list)
        if (u.producer == producing) {
          if (!first) first = &u;
          if (u.rank != first->rank || u.tb != first->tb)
            return PipelineProblem{
                path,
                fmt::format("{} is {} by rank {} tb {} and rank {} tb {}, and a pipeline uses it: "
                            "MSCCL++ runs the pipeline's iterations one after another, so a "
                            "token of one iteration may meet another iteration; use it from one "
                            "threadblock per side",
                            what, producing ? given : taken, first->rank, first->tb, u.rank, u.tb)};
        }
    }
    bool same = producers.size() == consumers.size();
    for (std::size_t i = 0; same && i < producers.size(); ++i) {
      const Segment& a = producers[i];
      const Segment& b = consumers[i];
      same = a.count == b.count && (a.loop < 0) == (b.loop < 0) &&
             (a.loop < 0 || sameIterations(loops[static_cast<std::size_t>(a.loop)],
                                           loops[static_cast<std::size_t>(b.loop)]));
    }
    if (!same)
      return PipelineProblem{
          path,
          fmt::format("{} is {} {} but {} {}; chorus reads a pipeline's body once, which "
                      "matches MSCCL++'s unit-by-unit iterations only when each signal (release) "
                      "in a pipeline meets its wait (acquire) in a pipeline of the same "
                      "unit_size, num_chunks and chunk count, as many per iteration, and signals "
                      "outside pipelines meet waits outside them",
                      what, given, describe(producers, loops), taken, describe(consumers, loops))};
  }
  return std::nullopt;
}

}  // namespace

std::optional<PipelineProblem> findPipelineProblem(const Algorithm& algorithm,
                                                   const std::vector<PipelineLoop>& loops,
                                                   const PipelineTags& tags) {
  if (loops.empty()) return std::nullopt;
  if (auto problem = checkOperandSpans(algorithm, loops, tags)) return problem;
  return checkSyncSegments(algorithm, loops, tags);
}

}  // namespace chorus::ir::mscclpp_reader
