#include "verify/check_structure.h"

#include <algorithm>
#include <map>
#include <string>

#include <fmt/format.h>

#include "ir/step_endpoints.h"
#include "verify/step_access.h"

namespace chorus::verify {

namespace {

using ir::BufferKind;

struct StructureChecker {
  const ir::Algorithm& algorithm;
  const ir::Collective& collective;
  FindingSink& sink;
  bool sound = true;

  void fail(int rank, int tb, int step, std::string message) {
    sound = false;
    sink.add(FindingKind::malformed, rank, tb, step, std::move(message));
  }

  bool peerValid(int peer, int rank) const {
    return peer == -1 || (peer >= 0 && peer < algorithm.nranks && peer != rank);
  }

  void checkThreadblock(const ir::RankProgram& program, int tbIndex) {
    const int rank = program.rank;
    const ir::Threadblock& tb = program.threadblocks[tbIndex];
    if (tb.id != tbIndex)
      sink.add(FindingKind::malformed, rank, tbIndex, -1,
               fmt::format("rank {} threadblock at position {} has id {}; threadblock ids must "
                           "be 0, 1, 2, ... in order because dependencies name tbs by position",
                           rank, tbIndex, tb.id));
    for (auto [peer, what] : {std::pair{tb.sendPeer, "send"}, std::pair{tb.recvPeer, "recv"}}) {
      if (!peerValid(peer, rank))
        fail(rank, tbIndex, -1,
             fmt::format("rank {} tb {} has {} peer {}, which is {}; use -1 (none) or another "
                         "rank of 0..{}",
                         rank, tbIndex, what, peer, peer == rank ? "its own rank" : "not a rank",
                         algorithm.nranks - 1));
    }
    if (tb.channel < 0)
      fail(rank, tbIndex, -1,
           fmt::format("rank {} tb {} has channel {}; channels are numbered from 0", rank, tbIndex,
                       tb.channel));
    for (int s = 0; s < static_cast<int>(tb.steps.size()); ++s)
      checkStep(program, tbIndex, s);
  }

  void checkStep(const ir::RankProgram& program, int tbIndex, int s) {
    const int rank = program.rank;
    const ir::Threadblock& tb = program.threadblocks[tbIndex];
    const ir::Step& step = tb.steps[s];
    auto where = [&] {
      return fmt::format("{} ({})", describeStepRef(rank, tbIndex, s), describeOp(tb, step));
    };
    // A two-sided step that names its own peer or channel; the simulation-based checks (and the
    // runtime) read only the threadblock's.
    if (std::string issue = ir::stepEndpointIssue(program, tbIndex, s, algorithm.nranks);
        !issue.empty())
      fail(rank, tbIndex, s, std::move(issue));
    if (step.count < 1) {
      fail(rank, tbIndex, s,
           fmt::format("{} has count {}; a step moves at least 1 chunk", where(), step.count));
      return;
    }
    if (ir::opSends(step.op) && tb.sendPeer < 0)
      fail(rank, tbIndex, s,
           fmt::format("{} sends, but tb {} has no send peer (send=-1); set the tb's send peer "
                       "or move the step to a tb that sends to the intended rank",
                       where(), tbIndex));
    if (ir::opReceives(step.op) && tb.recvPeer < 0)
      fail(rank, tbIndex, s,
           fmt::format("{} receives, but tb {} has no receive peer (recv=-1); set the tb's "
                       "receive peer or move the step to a tb that receives from the intended "
                       "rank",
                       where(), tbIndex));
    for (const StepAccess& access : localAccesses(step))
      if (!checkBounds(program, tbIndex, s, access)) break;  // one finding per step is enough
    for (const ir::StepRef& dep : step.deps)
      checkDependency(program, tbIndex, s, dep);
  }

  // The smallest of the collective's size and the declared extent (when declared) of `buffer`.
  long bufferLimit(const ir::RankProgram& program, BufferKind buffer) const {
    switch (buffer) {
      case BufferKind::input:
        return program.inputChunks > 0
                   ? std::min(program.inputChunks, collective.inputChunks(program.rank))
                   : collective.inputChunks(program.rank);
      case BufferKind::output:
        return program.outputChunks > 0
                   ? std::min(program.outputChunks, collective.outputChunks(program.rank))
                   : collective.outputChunks(program.rank);
      case BufferKind::scratch:
        return program.scratchChunks;
    }
    return 0;
  }

  // Returns false after reporting an out-of-range access.
  bool checkBounds(const ir::RankProgram& program, int tbIndex, int s, const StepAccess& a) {
    const int rank = program.rank;
    const ir::Step& step = program.threadblocks[tbIndex].steps[s];
    const long end = static_cast<long>(a.index) + a.count;
    if (a.index >= 0 && end <= bufferLimit(program, a.buffer)) return true;
    const std::string verb = a.writes ? (a.reads ? "updates" : "writes") : "reads";
    const std::string where = fmt::format("{} ({}) {} {}", describeStepRef(rank, tbIndex, s),
                                          describeOp(program.threadblocks[tbIndex], step), verb,
                                          describeRange(a.buffer, a.index, a.count));
    const bool receiveReduceSrc =
        a.isSrc && ir::opReceives(step.op) && ir::opReadsSrc(step.op) &&
        (step.srcBuffer != step.dstBuffer || step.srcIndex != step.dstIndex);
    const std::string rrNote =
        receiveReduceSrc
            ? "; note that msccl-tools writes the peer's offset in srcoff of receive-reduce "
              "steps, while the runtime reads srcoff as the LOCAL operand: write the index of "
              "the local chunk that is reduced with the received one"
            : "";
    if (a.index < 0) {
      fail(rank, tbIndex, s, fmt::format("{}, a negative chunk index{}", where, rrNote));
      return false;
    }
    int size = 0;
    int declared = 0;
    const char* declaredName = "";
    switch (a.buffer) {
      case BufferKind::input:
        size = collective.inputChunks(rank);
        declared = program.inputChunks;
        declaredName = "inputChunks (i_chunks)";
        break;
      case BufferKind::output:
        size = collective.outputChunks(rank);
        declared = program.outputChunks;
        declaredName = "outputChunks (o_chunks)";
        break;
      case BufferKind::scratch:
        size = program.scratchChunks;
        declared = program.scratchChunks;
        declaredName = "scratchChunks (s_chunks)";
        break;
    }
    if (a.buffer == BufferKind::scratch) {
      if (end > size)
        fail(rank, tbIndex, s,
             fmt::format("{}, beyond rank {}'s scratch buffer of {} chunk(s); raise its {} to "
                         "at least {}{}",
                         where, rank, size, declaredName, end, rrNote));
      return end <= size;
    }
    if (end > size) {
      fail(rank, tbIndex, s,
           fmt::format("{}, beyond the {} buffer of {} chunk(s) that {} on {} ranks (chunk factor "
                       "{}) gives rank {}{}",
                       where, ir::bufferName(a.buffer), size, collective.name(),
                       collective.nranks(), collective.chunkFactor(), rank, rrNote));
      return false;
    }
    if (declared > 0 && end > declared) {
      fail(rank, tbIndex, s,
           fmt::format("{}, beyond rank {}'s declared {}={} (the runtime bounds-checks "
                       "accesses against it){}",
                       where, rank, declaredName, declared, rrNote));
      return false;
    }
    return true;
  }

  void checkDependency(const ir::RankProgram& program, int tbIndex, int s, const ir::StepRef& dep) {
    const int rank = program.rank;
    const std::string where = describeStepRef(rank, tbIndex, s);
    const int ntbs = static_cast<int>(program.threadblocks.size());
    if (dep.tb < 0 || dep.tb >= ntbs) {
      fail(rank, tbIndex, s,
           fmt::format("{} depends on tb {} step {}, but rank {} has threadblocks 0..{} only",
                       where, dep.tb, dep.step, rank, ntbs - 1));
      return;
    }
    if (dep.tb == tbIndex) {
      fail(rank, tbIndex, s,
           fmt::format("{} depends on step {} of its own threadblock; steps of one tb already "
                       "run in order, so drop this dependency",
                       where, dep.step));
      return;
    }
    const int nsteps = static_cast<int>(program.threadblocks[dep.tb].steps.size());
    if (dep.step < 0 || dep.step >= nsteps)
      fail(rank, tbIndex, s,
           fmt::format("{} depends on tb {} step {}, but that threadblock has {} step(s)", where,
                       dep.tb, dep.step, nsteps));
  }

  // A depended-on step must publish its completion (hasDependents), or its dependents wait
  // for a flag the runtime never sets.
  void checkHasDependents(const ir::RankProgram& program) {
    std::map<ir::StepRef, ir::StepRef> firstDependent;
    const int ntbs = static_cast<int>(program.threadblocks.size());
    for (int t = 0; t < ntbs; ++t) {
      const auto& steps = program.threadblocks[t].steps;
      for (int s = 0; s < static_cast<int>(steps.size()); ++s)
        for (const ir::StepRef& dep : steps[s].deps)
          firstDependent.emplace(dep, ir::StepRef{t, s});
    }
    for (const auto& [dep, dependent] : firstDependent) {
      if (dep.tb < 0 || dep.tb >= ntbs || dep.tb == dependent.tb) continue;
      const auto& steps = program.threadblocks[dep.tb].steps;
      if (dep.step < 0 || dep.step >= static_cast<int>(steps.size())) continue;
      if (!steps[dep.step].hasDependents)
        sink.add(FindingKind::malformed, program.rank, dep.tb, dep.step,
                 fmt::format("{} is a dependency of tb {} step {} but is not marked "
                             "hasDependents (hasdep=1); the runtime publishes completion only "
                             "for marked steps, so set the flag on it",
                             describeStepRef(program.rank, dep.tb, dep.step), dependent.tb,
                             dependent.step));
    }
  }

  void run() {
    const int n = algorithm.nranks;
    if (n < 1 || static_cast<int>(algorithm.ranks.size()) != n) {
      fail(-1, -1, -1,
           fmt::format("the algorithm declares {} rank(s) (ngpus) but has {} rank program(s); "
                       "give exactly one program per rank",
                       n, algorithm.ranks.size()));
      return;
    }
    if (collective.nranks() != n) {
      fail(-1, -1, -1,
           fmt::format("the algorithm has {} ranks but the collective it is checked against ({}) "
                       "has {}",
                       n, collective.name(), collective.nranks()));
      return;
    }
    for (int r = 0; r < n; ++r) {
      if (sink.full()) {
        sink.markTruncated();  // later ranks may hold more problems
        return;
      }
      const ir::RankProgram& program = algorithm.ranks[r];
      if (program.rank != r) {
        fail(r, -1, -1,
             fmt::format("the program at position {} says it is rank {}; rank programs must be "
                         "listed in rank order",
                         r, program.rank));
        continue;
      }
      if (program.inputChunks < 0 || program.outputChunks < 0 || program.scratchChunks < 0)
        fail(r, -1, -1,
             fmt::format("rank {} declares a negative buffer size (inputChunks={}, "
                         "outputChunks={}, scratchChunks={})",
                         r, program.inputChunks, program.outputChunks, program.scratchChunks));
      for (int t = 0; t < static_cast<int>(program.threadblocks.size()); ++t)
        checkThreadblock(program, t);
      checkHasDependents(program);
    }
  }
};

}  // namespace

bool checkStructure(const ir::Algorithm& algorithm, const ir::Collective& collective,
                    FindingSink& sink) {
  StructureChecker checker{algorithm, collective, sink};
  checker.run();
  return checker.sound && !sink.full();
}

}  // namespace chorus::verify
