// A directed graph's successor lists as one flat array (compressed sparse rows), for the
// passes' list schedulers: node `id`'s successors are succs[begin[id] .. begin[id + 1]), each in
// the order the edges were met, and indegree[id] counts the edges into it.
#pragma once

#include <vector>

namespace chorus::compiler {

struct FlatSuccessors {
  std::vector<int> begin;  // n + 1 offsets into succs
  std::vector<int> succs;
  std::vector<int> indegree;  // per node
};

// The successors of nodes 0..n-1. `forEachEdge(visit)` calls visit(from, to) for every edge; it
// is called twice and must meet the same edges in the same order both times.
template <typename ForEachEdge>
FlatSuccessors flatSuccessors(int n, ForEachEdge&& forEachEdge) {
  FlatSuccessors out;
  out.begin.assign(static_cast<std::size_t>(n) + 1, 0);
  out.indegree.assign(static_cast<std::size_t>(n), 0);
  forEachEdge([&](int from, int to) {
    ++out.begin[static_cast<std::size_t>(from) + 1];
    ++out.indegree[static_cast<std::size_t>(to)];
  });
  for (std::size_t id = 0; id < static_cast<std::size_t>(n); ++id)
    out.begin[id + 1] += out.begin[id];
  out.succs.resize(static_cast<std::size_t>(out.begin.back()));
  std::vector<int> next(out.begin.begin(), out.begin.end() - 1);
  forEachEdge([&](int from, int to) {
    out.succs[static_cast<std::size_t>(next[static_cast<std::size_t>(from)]++)] = to;
  });
  return out;
}

}  // namespace chorus::compiler
