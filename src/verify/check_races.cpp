#include "verify/check_races.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "verify/step_access.h"

namespace chorus::verify {

namespace {

// Algorithm (happens-before over one iteration):
//  1. Nodes are steps; edges are program order within a tb, dependency edges (dependee ->
//     dependent) and message edges (k-th send -> k-th receive of a connection). FIFO
//     back-pressure is not an ordering a program may rely on, so it adds no edge.
//  2. A Kahn topological sort numbers the nodes; a cycle means a certain deadlock.
//  3. Accesses are grouped by canonical slot. For a write w of tb A and another tb T touching
//     the slot, only two queries are needed: T's last access before w in topological order
//     must reach w, and w must reach T's first access after it (program order covers the
//     rest, since a tb's accesses are ordered by step and so by topological index).
//  4. A query u ->* v is answered first by vector clocks over the rank's own tbs (program
//     order and dependencies only), then by a DFS over the whole graph that never enters a
//     node numbered after v.
class RaceChecker {
 public:
  RaceChecker(const ProgramModel& model, FindingSink& sink) : model_(model), sink_(sink) {}

  bool run() {
    buildEdges();
    if (!sortTopologically()) return false;
    collectAccesses();
    findRaces();
    report();
    return true;
  }

 private:
  struct Access {
    int slot;
    int node;
    bool write;
    ir::BufferKind buffer;  // as the step names it
    int index;
  };
  struct Race {
    int slot;
    int lastSlot;
    std::size_t chunks;
    Access first;  // earlier in topological order
    Access second;
  };

  bool lastInTb(int node) const {
    const TbInfo& info = model_.tbs[model_.nodeTb[node]];
    return node + 1 == info.firstNode + info.steps;
  }

  void buildEdges() {
    const int n = model_.nodeCount();
    std::vector<std::pair<int, int>> edges;
    for (int g = 0; g < static_cast<int>(model_.tbs.size()); ++g) {
      const TbInfo& info = model_.tbs[g];
      const int firstTb = model_.rankFirstTb[info.rank];
      const auto& steps = model_.threadblock(g).steps;
      for (int s = 0; s < info.steps; ++s)
        for (const ir::StepRef& dep : steps[s].deps)
          edges.emplace_back(model_.nodeOf(firstTb + dep.tb, dep.step), info.firstNode + s);
    }
    for (const Connection& c : model_.connections)
      for (std::size_t k = 0; k < c.sendNodes.size(); ++k)
        edges.emplace_back(c.sendNodes[k], c.recvNodes[k]);
    edgeStart_.assign(n + 1, 0);
    for (const auto& e : edges)
      ++edgeStart_[e.first + 1];
    for (int v = 0; v < n; ++v)
      edgeStart_[v + 1] += edgeStart_[v];
    edgeTarget_.resize(edges.size());
    std::vector<int> fill(edgeStart_.begin(), edgeStart_.end() - 1);
    for (const auto& e : edges)
      edgeTarget_[fill[e.first]++] = e.second;
  }

  template <typename F>
  void forEachSuccessor(int v, F&& f) const {
    if (!lastInTb(v)) f(v + 1);
    for (int i = edgeStart_[v]; i < edgeStart_[v + 1]; ++i)
      f(edgeTarget_[i]);
  }

  bool sortTopologically() {
    const int n = model_.nodeCount();
    std::vector<int> indegree(n, 0);
    for (int v = 0; v < n; ++v)
      forEachSuccessor(v, [&](int w) { ++indegree[w]; });
    std::vector<int> queue;
    queue.reserve(n);
    for (int v = 0; v < n; ++v)
      if (indegree[v] == 0) queue.push_back(v);
    topo_.assign(n, -1);
    for (std::size_t head = 0; head < queue.size(); ++head) {
      const int v = queue[head];
      topo_[v] = static_cast<int>(head);
      forEachSuccessor(v, [&](int w) {
        if (--indegree[w] == 0) queue.push_back(w);
      });
    }
    return static_cast<int>(queue.size()) == n;
  }

  // Accesses sorted by (slot, node). A slot belongs to one rank, so only ranks with two or
  // more tbs can race; the others' accesses are left out.
  void collectAccesses() {
    std::vector<Access> byNode;
    for (int v = 0; v < model_.nodeCount(); ++v) {
      const int rank = model_.tbs[model_.nodeTb[v]].rank;
      if (model_.rankFirstTb[rank + 1] - model_.rankFirstTb[rank] < 2) continue;
      for (const StepAccess& a : localAccesses(model_.step(v)))
        for (int i = 0; i < a.count; ++i)
          byNode.push_back(Access{model_.slotOf(rank, a.buffer, a.index + i), v, a.writes, a.buffer,
                                  a.index + i});
    }
    // Counting sort by slot; stable, so each slot's accesses stay in node order.
    std::vector<std::size_t> start(model_.slotRank.size() + 1, 0);
    for (const Access& a : byNode)
      ++start[static_cast<std::size_t>(a.slot) + 1];
    for (std::size_t s = 1; s < start.size(); ++s)
      start[s] += start[s - 1];
    accesses_.resize(byNode.size());
    for (const Access& a : byNode)
      accesses_[start[static_cast<std::size_t>(a.slot)]++] = a;
  }

  void findRaces() {
    for (std::size_t lo = 0; lo < accesses_.size();) {
      std::size_t hi = lo;
      bool anyWrite = false;
      bool manyTbs = false;
      while (hi < accesses_.size() && accesses_[hi].slot == accesses_[lo].slot) {
        anyWrite |= accesses_[hi].write;
        manyTbs |= model_.nodeTb[accesses_[hi].node] != model_.nodeTb[accesses_[lo].node];
        ++hi;
      }
      if (anyWrite && manyTbs) checkSlot(lo, hi);
      lo = hi;
    }
  }

  // Accesses [lo, hi) share one slot and are sorted by node, so each tb's are contiguous.
  void checkSlot(std::size_t lo, std::size_t hi) {
    std::vector<std::pair<std::size_t, std::size_t>> runs;  // per tb
    for (std::size_t i = lo; i < hi;) {
      std::size_t j = i;
      while (j < hi && model_.nodeTb[accesses_[j].node] == model_.nodeTb[accesses_[i].node])
        ++j;
      runs.emplace_back(i, j);
      i = j;
    }
    for (const auto& [wlo, whi] : runs) {
      for (std::size_t w = wlo; w < whi; ++w) {
        if (!accesses_[w].write) continue;
        const int tw = topo_[accesses_[w].node];
        for (const auto& [tlo, thi] : runs) {
          if (tlo == wlo) continue;
          // First access of this tb after w in topological order.
          const std::size_t q = static_cast<std::size_t>(
              std::partition_point(accesses_.begin() + static_cast<std::ptrdiff_t>(tlo),
                                   accesses_.begin() + static_cast<std::ptrdiff_t>(thi),
                                   [&](const Access& a) { return topo_[a.node] < tw; }) -
              accesses_.begin());
          if (q > tlo && !reaches(accesses_[q - 1].node, accesses_[w].node))
            noteRace(accesses_[q - 1], accesses_[w]);
          if (q < thi && !reaches(accesses_[w].node, accesses_[q].node))
            noteRace(accesses_[w], accesses_[q]);
        }
      }
    }
  }

  void noteRace(const Access& first, const Access& second) {
    // Slots are visited in increasing order, so the stored slot is the smallest one.
    auto [it, inserted] = races_.try_emplace({first.node, second.node},
                                             Race{first.slot, first.slot, 1, first, second});
    if (!inserted && it->second.lastSlot != first.slot) {
      ++it->second.chunks;
      it->second.lastSlot = first.slot;
    }
  }

  bool reaches(int from, int to) {
    if (topo_[from] >= topo_[to]) return from == to;
    if (reachesLocally(from, to)) return true;
    return search(from, to);
  }

  // Vector clocks over one rank's tbs along program order and dependencies.
  bool reachesLocally(int from, int to) {
    const int rank = model_.tbs[model_.nodeTb[to]].rank;
    if (clockRank_.empty()) clockRank_.assign(model_.rankFirstTb.size(), -2);
    if (clockRank_[rank] == -2) buildClocks(rank);
    if (clockRank_[rank] < 0) return false;
    const RankClocks& c = clocks_[clockRank_[rank]];
    const int fromTb = model_.tbs[model_.nodeTb[from]].tb;
    return c.clock[static_cast<std::size_t>(to - c.firstNode) * c.width + fromTb] >=
           model_.stepOf(from);
  }

  void buildClocks(int rank) {
    constexpr std::size_t kMaxEntries = std::size_t{1} << 26;
    const int firstTb = model_.rankFirstTb[rank];
    const int lastTb = model_.rankFirstTb[rank + 1];
    RankClocks c;
    c.width = static_cast<std::size_t>(lastTb - firstTb);
    c.firstNode = model_.tbs[firstTb].firstNode;
    const int endNode = model_.tbs[lastTb - 1].firstNode + model_.tbs[lastTb - 1].steps;
    const std::size_t nodes = static_cast<std::size_t>(endNode - c.firstNode);
    if (nodes * c.width > kMaxEntries) {
      clockRank_[rank] = -1;
      return;
    }
    std::vector<int> order(nodes);
    for (std::size_t i = 0; i < nodes; ++i)
      order[i] = c.firstNode + static_cast<int>(i);
    std::sort(order.begin(), order.end(), [&](int x, int y) { return topo_[x] < topo_[y]; });
    c.clock.assign(nodes * c.width, -1);
    for (int v : order) {
      int32_t* mine = &c.clock[static_cast<std::size_t>(v - c.firstNode) * c.width];
      const int s = model_.stepOf(v);
      if (s > 0) std::copy_n(mine - c.width, c.width, mine);
      for (const ir::StepRef& dep : model_.step(v).deps) {
        const int d = model_.nodeOf(firstTb + dep.tb, dep.step);
        const int32_t* theirs = &c.clock[static_cast<std::size_t>(d - c.firstNode) * c.width];
        for (std::size_t k = 0; k < c.width; ++k)
          mine[k] = std::max(mine[k], theirs[k]);
      }
      mine[model_.tbs[model_.nodeTb[v]].tb] = s;
    }
    clockRank_[rank] = static_cast<int>(clocks_.size());
    clocks_.push_back(std::move(c));
  }

  // DFS from `from`, never entering nodes numbered after `to`.
  bool search(int from, int to) {
    if (stamp_.empty()) stamp_.assign(model_.nodeCount(), 0);
    ++currentStamp_;
    const int limit = topo_[to];
    stack_.clear();
    stack_.push_back(from);
    stamp_[from] = currentStamp_;
    while (!stack_.empty()) {
      const int v = stack_.back();
      stack_.pop_back();
      bool found = false;
      forEachSuccessor(v, [&](int w) {
        if (found || stamp_[w] == currentStamp_ || topo_[w] > limit) return;
        if (w == to) {
          found = true;
          return;
        }
        stamp_[w] = currentStamp_;
        stack_.push_back(w);
      });
      if (found) return true;
    }
    return false;
  }

  std::string describeAccess(const Access& a) const {
    const int rank = model_.tbs[model_.nodeTb[a.node]].rank;
    const std::string named = fmt::format("{}[{}]", ir::bufferName(a.buffer), a.index);
    const bool aliased = model_.slotOf(rank, a.buffer, a.index) == a.slot &&
                         model_.slotLocation[a.slot] != ir::Location{a.buffer, a.index};
    return fmt::format("{} ({}) {} it{}", model_.nodeName(a.node),
                       describeOp(model_.threadblock(model_.nodeTb[a.node]), model_.step(a.node)),
                       a.write ? "writes" : "reads",
                       aliased ? fmt::format(" as {}", named) : std::string());
  }

  // The order a fix most likely wants: a read of a chunk with an initial value before the
  // write that replaces it, a write of a chunk without one before the read that consumes it;
  // two writes in topological order.
  void orderForHint(Race& race) const {
    Access& a = race.first;
    Access& b = race.second;
    if (a.write == b.write) return;
    const bool readFirst = model_.slotHasInitialValue[race.slot];
    if (a.write == readFirst) std::swap(a, b);
  }

  void report() {
    std::vector<Race> races;
    for (const auto& [key, race] : races_)
      races.push_back(race);
    std::sort(races.begin(), races.end(), [&](const Race& x, const Race& y) {
      return std::pair{x.slot, topo_[x.first.node]} < std::pair{y.slot, topo_[y.first.node]};
    });
    for (Race& race : races) {
      if (sink_.full()) {
        sink_.markTruncated();
        return;
      }
      orderForHint(race);
      const TbInfo& first = model_.tbs[model_.nodeTb[race.first.node]];
      const TbInfo& second = model_.tbs[model_.nodeTb[race.second.node]];
      const int firstStep = model_.stepOf(race.first.node);
      const int secondStep = model_.stepOf(race.second.node);
      const std::string more =
          race.chunks > 1 ? fmt::format(" (and {} more chunk(s) they share)", race.chunks - 1)
                          : std::string();
      sink_.add(FindingKind::race, first.rank, second.tb, secondStep,
                fmt::format("race on rank {} {}{}: {} and {}, with no chain of program order, "
                            "dependencies and messages between them; add a dependency so that "
                            "tb {} step {} waits for tb {} step {} (add {{tb {}, step {}}} to its "
                            "deps)",
                            first.rank, model_.slotName(race.slot), more,
                            describeAccess(race.first), describeAccess(race.second), second.tb,
                            secondStep, first.tb, firstStep, first.tb, firstStep));
    }
  }

  struct RankClocks {
    int firstNode = 0;
    std::size_t width = 0;
    std::vector<int32_t> clock;  // node-major: clock[node * width + tb] = last step of tb before
  };

  const ProgramModel& model_;
  FindingSink& sink_;
  std::vector<int> edgeStart_;
  std::vector<int> edgeTarget_;
  std::vector<int> topo_;
  std::vector<Access> accesses_;
  std::map<std::pair<int, int>, Race> races_;
  std::vector<int> clockRank_;  // rank -> index in clocks_, -1 too big, -2 not built
  std::vector<RankClocks> clocks_;
  std::vector<std::uint32_t> stamp_;
  std::uint32_t currentStamp_ = 0;
  std::vector<int> stack_;
};

}  // namespace

bool checkRaces(const ProgramModel& model, FindingSink& sink) {
  return RaceChecker(model, sink).run();
}

}  // namespace chorus::verify
