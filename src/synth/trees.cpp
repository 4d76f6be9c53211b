// Topology-aware binary trees: MXNet's ComputeTrees (MXNet trees; docs/sources.md "MXNet tree
// backend") and a search that improves on it.
//
// Algorithm (strategy mxnet; names of apache/mxnet src/kvstore/gpu_topology.h):
//   1. d = computeDepth(n). For root r = 0..n-1, on one copy W of the link matrix:
//   2. Kernighan-Lin (unless backtrackOnly), with std::mt19937 gen(1) seeded anew for each root:
//      a. all GPUs in cluster 0, roots = {r}, topo = [r], scan = [0];
//      b. splitClusters: each cluster of > 2 GPUs is shuffled, halved (first floor(s/2) on side
//         A) and refined by KL passes (gain D = external - internal weight; swap the best
//         unlocked cross pair, lock, repeat; commit the best prefix; at most n passes); side B
//         becomes a new cluster. Clusters of <= 2 GPUs are recorded as (color, -size);
//      c. growTreeLevel: each split pair links its root to the heaviest GPU of the other half
//         (ties shuffled with gen), which becomes that half's root; a 2-cluster's root links to
//         its other member, a 1-cluster's to itself. The next array level is written from the
//         previous one (the first occurrence of a GPU gets its new child, repeats send to
//         themselves);
//      d. a pair without a root or without a positive link "resets" to (a) with the advanced
//         gen; after more than 10 resets fall back to step 3. Otherwise repeat (b)-(c) until
//         every cluster has <= 2 GPUs.
//   3. Backtracking: depth-first over the leaf vector (leaf 0 = r, GPUs tried in index order,
//      pruned by isValidState); every complete vector is post-processed and scored with
//      computeTreeWeight (penalties on). Exhaustive (best score) when d <= 3, else the first.
//   4. W[a][b] and W[b][a] *= penalty for every transfer of the tree (penalizeTreeLinks).
//
// Algorithm (strategy best, chorus's own):
//   5. Candidates per root: the MXNet tree; KL trees for seeds 1..options.seeds, with MXNet's
//      rules and with small clusters deferred (fixes n = 5, 9, 10, 11, where MXNet's KL can never
//      finish); for d <= 3 every valid tree (exhaustive enumeration), else the first one found
//      if KL gave none. A candidate must pass describeTreeProblem and use only links of weight
//      > 0 (MXNet does not check the link inside a 2-cluster, and its Postprocess can move a
//      subtree under a GPU with no link to it).
//   6. Starting sets: MXNet's trees; greedy by penalized weight (step 4's matrix, with the
//      options' penalty and with 0.5, 0.6, 0.8, 0.9; ties to the lower max link usage); greedy
//      by max link usage.
//   7. Local search on each start: replace one root's tree by another candidate when the total
//      weight does not drop, the max link usage does not rise and one of them, or the sum of
//      squared usages, improves; repeat until no move helps (at most 50 passes). Then iterated
//      local search from the preferred result: re-draw two roots' trees (std::mt19937 gen(1)),
//      descend again, keep the result when preferred.
//   8. Keep, among the results that are at least as good as MXNet's on both total weight and
//      max link usage (when MXNet's trees pass step 5's checks), the preferred one: lowest max
//      usage, then highest weight (prefer usage), or the reverse (prefer weight); then the
//      lowest sum of squared usages.
// chorus computes in double where MXNet uses float; exact ties among penalized weights could in
// principle break differently.
#include "synth/trees.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "support/error.h"

namespace chorus::synth {
namespace {

constexpr int kMaxLocalSearchPasses = 50;
// Iterated local search of strategy best: at most kMaxKicks restarts, fewer when the candidate
// sets are large (about kKickWork candidate evaluations per pass in all).
constexpr int kMaxKicks = 200;
constexpr std::size_t kKickWork = 4'000'000;
constexpr int kExhaustiveDepth = 3;  // MXNet: optimal backtracking up to 8 GPUs

std::size_t at(int i) {
  return static_cast<std::size_t>(i);
}

// D = -side ⊙ (W · side): external minus internal weight of each vertex (gemv + ewisemult).
void computeGains(const LinkMatrix& weight, const std::vector<int>& side, std::vector<double>& d) {
  const int n = weight.size;
  for (int row = 0; row < n; ++row) {
    double sum = 0;
    for (int col = 0; col < n; ++col)
      sum += weight.at(row, col) * static_cast<double>(side[at(col)]);
    d[at(row)] = sum * (-1.0 * static_cast<double>(side[at(row)]));
  }
}

// The member of `color` other than `parent` with the lowest index (GetChild); -1 if none.
int otherMember(const std::vector<int>& color, int cluster, int parent) {
  for (int i = 0; i < static_cast<int>(color.size()); ++i)
    if (color[at(i)] == cluster && i != parent) return i;
  return -1;
}

// The first root in `roots` whose cluster is `cluster` (GetRoot); -1 if none.
int rootOf(const std::vector<int>& color, int cluster, const std::vector<int>& roots) {
  for (const int root : roots)
    if (color[at(root)] == cluster) return root;
  return -1;
}

// Depth-first search of step 3. `visit` gets each post-processed complete leaf vector and
// returns false to stop the search.
template <typename Visit>
void searchLeaves(const LinkMatrix& weight, int root, int depth, std::uint64_t budget,
                  Visit&& visit) {
  const int n = weight.size;
  std::vector<int> state(std::size_t{1} << depth, -1);
  state[0] = root;
  std::uint64_t checks = 0;
  bool stopped = false;
  auto recurse = [&](auto&& self, int row) -> void {
    if (row == static_cast<int>(state.size())) {
      std::vector<int> leaves = state;
      postprocessLeaves(leaves, n, depth);
      if (!visit(leaves)) stopped = true;
      return;
    }
    for (int gpu = 0; gpu < n && !stopped; ++gpu) {
      state[at(row)] = gpu;
      if (++checks > budget) {
        throw OptionError(fmt::format(
            "the tree search from root {} gave up after {} validity checks without finishing; "
            "the link matrix is too sparse for balanced binary trees of depth {} (give GPUs "
            "more links with weight > 0)",
            root, budget, depth));
      }
      if (isValidState(weight, state, row + 1, depth)) self(self, row + 1);
      state[at(row)] = -1;
    }
  };
  recurse(recurse, 1);
}

// Positive-weight links must connect every GPU, or no spanning tree exists.
void requireConnected(const LinkMatrix& weight) {
  const int n = weight.size;
  std::vector<char> seen(at(n), 0);
  std::vector<int> stack = {0};
  seen[0] = 1;
  while (!stack.empty()) {
    const int a = stack.back();
    stack.pop_back();
    for (int b = 0; b < n; ++b) {
      if (b != a && seen[at(b)] == 0 && weight.at(a, b) > 0) {
        seen[at(b)] = 1;
        stack.push_back(b);
      }
    }
  }
  std::string unreachable;
  for (int b = 0; b < n; ++b)
    if (seen[at(b)] == 0) unreachable += fmt::format("{}{}", unreachable.empty() ? "" : ", ", b);
  if (!unreachable.empty()) {
    throw OptionError(fmt::format(
        "the links with weight > 0 do not connect every GPU: GPU(s) {} cannot be reached from "
        "GPU 0, so no spanning tree exists; give them a link with weight > 0 (with MXNet's "
        "1/2/3 classes, 1 = PCIe becomes 0 when NVLink alone connects the GPUs)",
        unreachable));
  }
}

// ---- strategy mxnet -------------------------------------------------------------------------

std::vector<Tree> computeMxnetTrees(const LinkMatrix& weights, const TreeOptions& options) {
  const int n = weights.size;
  const int depth = computeDepth(n);
  LinkMatrix w = weights;
  std::vector<Tree> trees;
  for (int root = 0; root < n; ++root) {
    std::optional<Tree> tree;
    if (!options.backtrackOnly) tree = kernighanLinTree(w, root, 1, options.maxResets, false);
    if (!tree) tree = backtrackTree(w, root, depth <= kExhaustiveDepth, options.searchBudget);
    if (!tree) {
      throw OptionError(fmt::format(
          "no balanced binary tree of depth {} from root {} uses only links with weight > 0; "
          "give GPU {} and its neighbours more links",
          depth, root, root));
    }
    penalizeTreeLinks(w, tree->topo, options.penalty);
    trees.push_back(std::move(*tree));
  }
  return trees;
}

// ---- strategy best --------------------------------------------------------------------------

struct TreeCandidate {
  Tree tree;
  std::vector<int> links;  // a * n + b, a < b, one per transfer
  double weight = 0;       // treeWeight on the unpenalized matrix
};

using CandidateSets = std::vector<std::vector<TreeCandidate>>;

TreeCandidate makeCandidate(const LinkMatrix& weights, Tree tree) {
  TreeCandidate candidate;
  const int n = weights.size;
  for (const TreeEdge& edge : listTreeEdges(tree)) {
    const int a = std::min(edge.parent, edge.child);
    const int b = std::max(edge.parent, edge.child);
    candidate.links.push_back(a * n + b);
  }
  candidate.weight = sumTreeWeight(weights, tree);
  candidate.tree = std::move(tree);
  return candidate;
}

// A tree the best strategy may use: structurally sound and every transfer on a link with
// weight > 0. (MXNet's post-processing can move a subtree under another parent and so create a
// transfer over a link of weight 0; MXNet keeps such trees, strategy best does not.)
bool isUsable(const LinkMatrix& weights, const Tree& tree) {
  if (!describeTreeProblem(tree, weights.size).empty()) return false;
  for (const TreeEdge& edge : listTreeEdges(tree))
    if (!(weights.at(edge.parent, edge.child) > 0)) return false;
  return true;
}

// Step 5.
std::vector<TreeCandidate> collectCandidates(const LinkMatrix& weights, int root,
                                             const Tree& mxnetTree, const TreeOptions& options) {
  const int depth = computeDepth(weights.size);
  std::vector<TreeCandidate> candidates;
  std::set<std::vector<int>> seen;
  auto add = [&](const Tree& tree, TreeMethod method) {
    if (!isUsable(weights, tree)) return false;
    if (!seen.insert(listTreeLeaves(tree)).second) return true;
    Tree copy = tree;
    copy.method = method;
    candidates.push_back(makeCandidate(weights, std::move(copy)));
    return true;
  };
  add(mxnetTree, mxnetTree.method);
  for (int seed = 1; seed <= options.seeds; ++seed) {
    for (const bool defer : {false, true}) {
      const std::optional<Tree> tree = kernighanLinTree(
          weights, root, static_cast<std::uint32_t>(seed), options.maxResets, defer);
      if (tree) add(*tree, TreeMethod::kernighanLin);
    }
  }
  if (depth <= kExhaustiveDepth || candidates.empty()) {
    // Every usable tree when small; otherwise the first one the depth-first search meets.
    const bool all = depth <= kExhaustiveDepth;
    searchLeaves(weights, root, depth, options.searchBudget, [&](const std::vector<int>& leaves) {
      const std::optional<Tree> tree = formTopology(leaves, depth);
      const bool usable = tree && add(*tree, TreeMethod::search);
      return all || !usable;
    });
  }
  return candidates;
}

// The trees chosen so far, with the link usage kept incrementally: usage per link, how many
// links have each usage count (for the maximum), the sum of squared usages and the weight.
struct Selection {
  int n = 0;
  std::vector<int> pick;     // per root, an index into its candidates
  std::vector<int> usage;    // n * n, upper triangle
  std::vector<int> byCount;  // byCount[u] = links used u times (u >= 1)
  int maxUsage = 0;
  long long squares = 0;
  double weight = 0;

  Selection(const CandidateSets& candidates, std::vector<int> picks, int ranks)
      : n(ranks), pick(std::move(picks)), usage(at(ranks * ranks), 0), byCount(at(ranks + 2), 0) {
    for (std::size_t r = 0; r < pick.size(); ++r)
      apply(candidates[r][at(pick[r])], +1);
  }

  void bump(int link, int delta) {
    int& u = usage[at(link)];
    if (u > 0) --byCount[at(u)];
    squares -= static_cast<long long>(u) * u;
    u += delta;
    squares += static_cast<long long>(u) * u;
    if (u > 0) ++byCount[at(u)];
    if (u > maxUsage) maxUsage = u;
    while (maxUsage > 0 && byCount[at(maxUsage)] == 0)
      --maxUsage;
  }

  void apply(const TreeCandidate& candidate, int sign) {
    for (const int link : candidate.links)
      bump(link, sign);
    weight += sign * candidate.weight;
  }
};

bool heavier(double a, double b) {
  return a > b + 1e-9 * std::max(1.0, std::abs(b));
}

// Usage first: (max usage, -weight, squares), lower is better; weight first: (-weight, max
// usage, squares).
bool preferred(const Selection& a, const Selection& b, bool weightFirst) {
  const bool differentWeight = heavier(a.weight, b.weight) || heavier(b.weight, a.weight);
  if (weightFirst && differentWeight) return a.weight > b.weight;
  if (a.maxUsage != b.maxUsage) return a.maxUsage < b.maxUsage;
  if (differentWeight) return a.weight > b.weight;
  return a.squares < b.squares;
}

// At least as good as `baseline` on both total weight and max link usage.
bool dominates(const Selection& a, const Selection& baseline) {
  return !heavier(baseline.weight, a.weight) && a.maxUsage <= baseline.maxUsage;
}

// Step 6: greedy, one root after another. `byUsage` ranks by (max usage, -weight, squares),
// otherwise by the penalized score (MXNet's on the matrix penalized by `penalty` per use), then
// max usage and squares.
std::vector<int> greedyPick(const LinkMatrix& weights, const CandidateSets& candidates,
                            double penalty, bool byUsage) {
  const int n = weights.size;
  const int depth = computeDepth(n);
  LinkMatrix penalized = weights;
  Selection selection(candidates, {}, n);
  for (int root = 0; root < n; ++root) {
    const std::vector<TreeCandidate>& choices = candidates[at(root)];
    int best = -1;
    std::tuple<double, double, long long> bestKey;
    for (int c = 0; c < static_cast<int>(choices.size()); ++c) {
      const TreeCandidate& candidate = choices[at(c)];
      selection.apply(candidate, +1);
      const double usage = selection.maxUsage;
      const std::tuple<double, double, long long> key =
          byUsage ? std::make_tuple(usage, -candidate.weight, selection.squares)
                  : std::make_tuple(
                        -computeTreeWeight(penalized, listTreeLeaves(candidate.tree), depth, true),
                        usage, selection.squares);
      selection.apply(candidate, -1);
      if (best < 0 || key < bestKey) {
        best = c;
        bestKey = key;
      }
    }
    CHORUS_INTERNAL_ASSERT(best >= 0, "every root has at least one candidate tree");
    selection.apply(choices[at(best)], +1);
    selection.pick.push_back(best);
    penalizeTreeLinks(penalized, choices[at(best)].tree.topo, penalty);
  }
  return selection.pick;
}

// Step 7: replace one root's tree while that helps without hurting.
void improveLocally(const CandidateSets& candidates, Selection& selection) {
  const int n = selection.n;
  for (int pass = 0; pass < kMaxLocalSearchPasses; ++pass) {
    bool improved = false;
    for (int root = 0; root < n; ++root) {
      const std::vector<TreeCandidate>& choices = candidates[at(root)];
      const int current = selection.pick[at(root)];
      int choice = current;
      double bestWeight = selection.weight;
      int bestMax = selection.maxUsage;
      long long bestSquares = selection.squares;
      selection.apply(choices[at(current)], -1);
      for (int c = 0; c < static_cast<int>(choices.size()); ++c) {
        if (c == current) continue;
        selection.apply(choices[at(c)], +1);
        const bool noWorse =
            !heavier(bestWeight, selection.weight) && selection.maxUsage <= bestMax;
        const bool better = heavier(selection.weight, bestWeight) || selection.maxUsage < bestMax ||
                            selection.squares < bestSquares;
        if (noWorse && better) {
          choice = c;
          bestWeight = selection.weight;
          bestMax = selection.maxUsage;
          bestSquares = selection.squares;
        }
        selection.apply(choices[at(c)], -1);
      }
      selection.apply(choices[at(choice)], +1);
      if (choice != current) {
        selection.pick[at(root)] = choice;
        improved = true;
      }
    }
    if (!improved) break;
  }
}

std::vector<Tree> computeBestTrees(const LinkMatrix& weights, const std::vector<Tree>& mxnetTrees,
                                   const TreeOptions& options) {
  const int n = weights.size;
  CandidateSets candidates;
  bool mxnetUsable = true;
  std::size_t total = 0;
  for (int root = 0; root < n; ++root) {
    candidates.push_back(collectCandidates(weights, root, mxnetTrees[at(root)], options));
    if (candidates.back().empty()) {
      throw OptionError(fmt::format(
          "no balanced binary tree from root {} reduces every GPU exactly once over links with "
          "weight > 0; give GPU {} and its neighbours more links",
          root, root));
    }
    total += candidates.back().size();
    // collectCandidates puts MXNet's tree first when it is usable.
    mxnetUsable = mxnetUsable && candidates.back().front().tree.topo == mxnetTrees[at(root)].topo;
  }
  const bool weightFirst = options.prefer == TreePreference::weight;
  const std::vector<int> mxnetPick(at(n), 0);
  const Selection baseline(candidates, mxnetPick, n);
  std::vector<Selection> starts;
  if (mxnetUsable) starts.push_back(baseline);
  for (const double penalty : {options.penalty, 0.5, 0.6, 0.8, 0.9})
    starts.emplace_back(candidates, greedyPick(weights, candidates, penalty, false), n);
  starts.emplace_back(candidates, greedyPick(weights, candidates, options.penalty, true), n);
  std::optional<Selection> chosen;
  for (Selection& start : starts) {
    improveLocally(candidates, start);
    if (mxnetUsable && !dominates(start, baseline)) continue;
    if (!chosen || preferred(start, *chosen, weightFirst)) chosen = start;
  }
  CHORUS_INTERNAL_ASSERT(chosen.has_value(), "the local search from MXNet's trees never loses");
  // Iterated local search: re-draw two roots' trees, descend, keep what is preferred.
  std::mt19937 gen(1);
  const int kicks = static_cast<int>(
      std::min<std::size_t>(kMaxKicks, kKickWork / std::max<std::size_t>(total, 1)));
  for (int kick = 0; kick < kicks; ++kick) {
    Selection trial = *chosen;
    for (int k = 0; k < 2; ++k) {
      const int root = std::uniform_int_distribution<int>(0, n - 1)(gen);
      const std::vector<TreeCandidate>& choices = candidates[at(root)];
      const int c =
          std::uniform_int_distribution<int>(0, static_cast<int>(choices.size()) - 1)(gen);
      trial.apply(choices[at(trial.pick[at(root)])], -1);
      trial.apply(choices[at(c)], +1);
      trial.pick[at(root)] = c;
    }
    improveLocally(candidates, trial);
    if (mxnetUsable && !dominates(trial, baseline)) continue;
    if (preferred(trial, *chosen, weightFirst)) chosen = trial;
  }
  // Step 8.
  std::vector<Tree> trees;
  for (int root = 0; root < n; ++root)
    trees.push_back(candidates[at(root)][at(chosen->pick[at(root)])].tree);
  return trees;
}

}  // namespace

std::string_view treeMethodName(TreeMethod method) {
  switch (method) {
    case TreeMethod::kernighanLin:
      return "kernighan-lin";
    case TreeMethod::backtracking:
      return "backtracking";
    case TreeMethod::search:
      return "search";
  }
  return "?";
}

std::string_view treePreferenceName(TreePreference preference) {
  return preference == TreePreference::usage ? "usage" : "weight";
}

TreePreference parseTreePreference(std::string_view name) {
  if (name == "usage") return TreePreference::usage;
  if (name == "weight") return TreePreference::weight;
  throw OptionError(
      fmt::format("unknown tree preference '{}'; use usage (lowest max link usage first) or weight "
                  "(highest total weight first)",
                  name));
}

std::string_view treeStrategyName(TreeStrategy strategy) {
  return strategy == TreeStrategy::mxnet ? "mxnet" : "best";
}

TreeStrategy parseTreeStrategy(std::string_view name) {
  if (name == "mxnet") return TreeStrategy::mxnet;
  if (name == "best") return TreeStrategy::best;
  throw OptionError(fmt::format(
      "unknown tree strategy '{}'; use mxnet (MXNet's trees exactly) or best (search for "
      "heavier trees with less link reuse)",
      name));
}

int treeDepth(const Tree& tree) {
  return static_cast<int>(tree.scan.size()) - 2;
}

std::vector<int> listTreeLeaves(const Tree& tree) {
  const int depth = treeDepth(tree);
  if (depth < 0) return {};
  return std::vector<int>(tree.topo.begin() + tree.scan[at(depth)],
                          tree.topo.begin() + tree.scan[at(depth + 1)]);
}

std::vector<TreeEdge> listTreeEdges(const Tree& tree) {
  std::vector<TreeEdge> edges;
  const int depth = treeDepth(tree);
  for (int level = 1; level <= depth; ++level) {
    for (int i = tree.scan[at(level)]; i + 1 < tree.scan[at(level + 1)]; i += 2) {
      const int parent = tree.topo[at(i)];
      const int child = tree.topo[at(i + 1)];
      if (parent != child) edges.push_back({level, parent, child});
    }
  }
  return edges;
}

std::string describeTreeProblem(const Tree& tree, int ranks) {
  const int depth = treeDepth(tree);
  if (depth < 1 || depth > kMaxTreeDepth)
    return fmt::format("scan has {} entries; a tree of depth d >= 1 has d + 2", tree.scan.size());
  for (int level = 0; level <= depth + 1; ++level) {
    if (tree.scan[at(level)] != (1 << level) - 1) {
      return fmt::format("scan[{}] is {}, expected {} (level offsets 0, 1, 3, 7, ...)", level,
                         tree.scan[at(level)], (1 << level) - 1);
    }
  }
  if (static_cast<int>(tree.topo.size()) != (2 << depth) - 1) {
    return fmt::format("topo has {} entries; a tree of depth {} has {}", tree.topo.size(), depth,
                       (2 << depth) - 1);
  }
  for (std::size_t i = 0; i < tree.topo.size(); ++i) {
    if (tree.topo[i] < 0 || tree.topo[i] >= ranks)
      return fmt::format("topo[{}] is {}, not a GPU in 0..{}", i, tree.topo[i], ranks - 1);
  }
  if (tree.topo[0] != tree.root)
    return fmt::format("topo[0] is {} but the root is {}", tree.topo[0], tree.root);
  std::vector<char> placed(at(ranks), 0);
  placed[at(tree.root)] = 1;
  for (int level = 1; level <= depth; ++level) {
    const int above = tree.scan[at(level - 1)];
    const int start = tree.scan[at(level)];
    for (int k = 0; start + 2 * k + 1 < tree.scan[at(level + 1)]; ++k) {
      const int parent = tree.topo[at(start + 2 * k)];
      const int child = tree.topo[at(start + 2 * k + 1)];
      if (parent != tree.topo[at(above + k)]) {
        return fmt::format(
            "level {} slot {} is {} but its parent slot holds {} (the left child "
            "must be the parent itself)",
            level, 2 * k, parent, tree.topo[at(above + k)]);
      }
      if (parent == child) continue;
      if (placed[at(child)] != 0) {
        return fmt::format(
            "GPU {} sends to GPU {} at level {} but is already in the tree; its data would be "
            "reduced twice",
            child, parent, level);
      }
      placed[at(child)] = 1;
    }
  }
  for (int gpu = 0; gpu < ranks; ++gpu)
    if (placed[at(gpu)] == 0) return fmt::format("GPU {} is not in the tree", gpu);
  return {};
}

int computeDepth(int n) {
  for (int depth = 0; depth < kMaxTreeDepth; ++depth)
    if (n <= (2 << depth)) return depth + 1;
  return 0;
}

std::optional<Tree> formTopology(const std::vector<int>& leaves, int depth) {
  if (std::find(leaves.begin(), leaves.end(), -1) != leaves.end()) return std::nullopt;
  CHORUS_INTERNAL_ASSERT(static_cast<int>(leaves.size()) == (1 << depth),
                         "formTopology needs 2^depth leaves");
  Tree tree;
  tree.root = leaves.front();
  tree.scan.push_back(0);
  for (int level = depth; level > 0; --level) {
    const std::size_t stride = std::size_t{1} << level;
    for (std::size_t j = 0; j < leaves.size(); j += stride)
      tree.topo.push_back(leaves[j]);
    tree.scan.push_back(static_cast<int>(tree.topo.size()));
  }
  tree.topo.insert(tree.topo.end(), leaves.begin(), leaves.end());
  tree.scan.push_back(static_cast<int>(tree.topo.size()));
  return tree;
}

double computeTreeWeight(const LinkMatrix& weight, const std::vector<int>& leaves, int depth,
                         bool penalty) {
  const int n = weight.size;
  double total = 0;
  std::set<int> linksUsed;
  for (int level = 0; level < depth; ++level) {
    const std::size_t stride = std::size_t{1} << level;
    std::vector<char> nodesUsed(at(n), 0);
    for (std::size_t j = 0; j + stride < leaves.size(); j += 2 * stride) {
      const int from = leaves[j];
      const int dest = leaves[j + stride];
      if (from != dest) {
        total += weight.at(from, dest);
        if (penalty && linksUsed.count(from * n + dest) != 0) total -= 100;
        linksUsed.insert(from * n + dest);
        linksUsed.insert(dest * n + from);
      }
      nodesUsed[at(from)] = 1;
      if (level > 0 && nodesUsed[at(dest)] != 0 && penalty) total -= 10;
      nodesUsed[at(dest)] = 1;
    }
  }
  return total;
}

void postprocessLeaves(std::vector<int>& leaves, int ranks, int depth) {
  const int size = static_cast<int>(leaves.size());
  for (int level = depth - 1; level >= 0; --level) {
    const int stride = 1 << level;
    std::vector<int> above(at(ranks), 0);
    for (int i = 0; i < size; i += 2 * stride)
      ++above[at(leaves[at(i)])];
    std::vector<int> histogram(at(ranks), 0);
    for (int i = 0; i < size; i += stride)
      ++histogram[at(leaves[at(i)])];
    for (int i = size - stride; i - stride >= 0; i -= 2 * stride) {
      const int from = leaves[at(i)];
      const int dest = leaves[at(i - stride)];
      if ((histogram[at(from)] > 1 || above[at(from)] >= 1) && from != dest) {
        leaves[at(i)] = dest;
        --histogram[at(from)];
      }
    }
  }
}

bool isValidState(const LinkMatrix& weight, const std::vector<int>& state, int row, int depth) {
  const int n = weight.size;
  std::vector<char> found(at(n), 0);
  int distinct = 0;
  for (const int value : state) {
    if (value < 0) continue;
    if (value >= n) return false;
    if (found[at(value)] == 0) {
      found[at(value)] = 1;
      ++distinct;
    }
  }
  for (int level = 0; level < depth; ++level) {
    const int stride = 1 << level;
    for (int j = 0; j + stride < row; j += 2 * stride) {
      const int from = state[at(j)];
      const int dest = state[at(j + stride)];
      if (from < 0 || dest < 0 || from == dest) continue;
      if (weight.at(from, dest) == 0) return false;
    }
  }
  const int modifier = (1 << depth) - n;
  if (row < n) return distinct <= row && distinct >= row - modifier;
  if (row == static_cast<int>(state.size())) return distinct == n;
  return true;
}

KLMove findBestMove(const LinkMatrix& weight, const std::vector<int>& side,
                    const std::vector<double>& d, const std::vector<char>& locked) {
  const int n = static_cast<int>(side.size());
  KLMove move;
  for (int row = 0; row < n; ++row) {
    if (side[at(row)] == 0 || locked[at(row)] != 0) continue;
    for (int col = row + 1; col < n; ++col) {
      if (side[at(col)] == 0 || side[at(row)] == side[at(col)]) continue;
      const double cost = d[at(row)] + d[at(col)] - 2 * weight.at(row, col);
      if (cost > move.gain) {
        move.gain = cost;
        move.a = row;
        move.b = col;
      }
    }
  }
  return move;
}

BestEdge findBestEdge(const LinkMatrix& weight, const std::vector<int>& color, int parent,
                      int cluster) {
  BestEdge best;
  best.candidates.push_back(-1);
  for (int col = 0; col < static_cast<int>(color.size()); ++col) {
    if (col == parent || color[at(col)] != cluster) continue;
    const double cost = weight.at(parent, col);
    if (cost > best.weight) best.candidates.clear();
    if (cost >= best.weight) {
      best.candidates.push_back(col);
      best.weight = cost;
    }
  }
  return best;
}

Clustering initialClustering(int ranks) {
  Clustering clustering;
  clustering.color.assign(at(ranks), 0);
  clustering.clusters = 1;
  return clustering;
}

bool splitClusters(const LinkMatrix& weight, Clustering& clustering, std::mt19937& gen) {
  const int n = static_cast<int>(clustering.color.size());
  std::vector<int> histogram(at(clustering.clusters), 0);
  for (const int color : clustering.color)
    ++histogram[at(color)];
  std::vector<int> side(at(n), 0);
  std::vector<int> saved(at(n), 0);
  std::vector<double> d(at(n), 0);
  bool stop = true;
  for (int color = 0; color < static_cast<int>(histogram.size()); ++color) {
    const int size = histogram[at(color)];
    if (size <= 2) {
      clustering.pairs.push_back({color, -size});
      continue;
    }
    stop = false;
    // 1. A random balanced cut: the first floor(size/2) shuffled members on side A (+1).
    std::vector<int> members;
    for (int i = 0; i < n; ++i) {
      if (clustering.color[at(i)] == color) {
        members.push_back(i);
      } else {
        side[at(i)] = 0;
      }
    }
    std::shuffle(members.begin(), members.end(), gen);
    for (std::size_t k = 0; k < members.size(); ++k)
      side[at(members[k])] = static_cast<int>(k) < size / 2 ? 1 : -1;
    // 2. KL passes. As in MXNet, the best gain and its prefix length carry over between passes
    //    unless a pass runs out of positive moves.
    double gainMax = 0;
    int gainPrefix = -1;
    int passes = 0;
    do {
      ++passes;
      saved = side;
      computeGains(weight, side, d);
      std::vector<int> as;
      std::vector<int> bs;
      std::vector<double> gains;
      std::vector<char> locked(at(n), 0);
      for (int iter = 0; iter < size / 2; ++iter) {
        const KLMove move = findBestMove(weight, side, d, locked);
        if (!(move.gain > 0)) {
          gainMax = 0;
          break;
        }
        as.push_back(move.a);
        bs.push_back(move.b);
        gains.push_back(move.gain);
        side[at(move.a)] *= -1;
        side[at(move.b)] *= -1;
        locked[at(move.a)] = 1;
        locked[at(move.b)] = 1;
        computeGains(weight, side, d);
        d[at(move.a)] = 0;
        d[at(move.b)] = 0;
      }
      // 3. The prefix of moves with the largest cumulative gain.
      for (std::size_t k = 0; k < gains.size(); ++k) {
        if (k > 0) gains[k] += gains[k - 1];
        if (gains[k] > gainMax) {
          gainMax = gains[k];
          gainPrefix = static_cast<int>(k) + 1;
        }
      }
      // 4. Commit it, or roll back.
      if (gainMax > 0) {
        for (int i = 0; i < gainPrefix; ++i)
          std::swap(saved[at(as[at(i)])], saved[at(bs[at(i)])]);
      }
      side = saved;
    } while (gainMax > 0 && passes <= n);
    // 5. Side B becomes a new cluster.
    for (int i = 0; i < n; ++i)
      if (side[at(i)] == -1) clustering.color[at(i)] = clustering.clusters;
    clustering.pairs.push_back({color, clustering.clusters});
    ++clustering.clusters;
  }
  return stop;
}

bool growTreeLevel(const LinkMatrix& weight, Clustering& clustering, std::vector<int>& roots,
                   std::vector<int>& topo, std::vector<int>& scan, std::mt19937& gen,
                   bool deferSmallClusters) {
  const int n = static_cast<int>(clustering.color.size());
  std::vector<int> newRoots;
  std::vector<int> childOf(at(n), -1);
  for (std::size_t i = 0; i < clustering.pairs.size(); ++i) {
    if (i == 0) scan.push_back(static_cast<int>(topo.size()));
    const ClusterPair pair = clustering.pairs[i];
    int parent = -1;
    int child = -1;
    if (pair.second < 0) {
      parent = rootOf(clustering.color, pair.first, roots);
      if (parent == -1) return true;
      child = pair.second == -2 && !deferSmallClusters
                  ? otherMember(clustering.color, pair.first, parent)
                  : parent;
      if (deferSmallClusters) newRoots.push_back(parent);
    } else {
      int from = pair.first;
      parent = rootOf(clustering.color, from, roots);
      if (parent == -1) {
        from = pair.second;
        parent = rootOf(clustering.color, from, roots);
      }
      if (parent == -1) return true;
      const int dest = from == pair.first ? pair.second : pair.first;
      BestEdge best = findBestEdge(weight, clustering.color, parent, dest);
      if (best.candidates.front() != -1) {
        std::shuffle(best.candidates.begin(), best.candidates.end(), gen);
        child = best.candidates.front();
      }
      if (child == -1) return true;
      newRoots.push_back(parent);
      newRoots.push_back(child);
    }
    childOf[at(parent)] = child;
  }
  const std::size_t levels = scan.size();
  const int start = scan[levels - 2];
  const int end = scan[levels - 1];
  for (int i = start; i < end; ++i) {
    const int parent = topo[at(i)];
    int child = parent;
    if (i == start || parent != topo[at(i - 1)]) {
      child = childOf[at(parent)];
      CHORUS_INTERNAL_ASSERT(child >= 0, fmt::format("GPU {} of the previous tree level is the "
                                                     "root of no cluster",
                                                     parent));
    }
    topo.push_back(parent);
    topo.push_back(child);
  }
  clustering.pairs.clear();
  roots = std::move(newRoots);
  return false;
}

void penalizeTreeLinks(LinkMatrix& weight, const std::vector<int>& topo, double alpha) {
  for (std::size_t i = 1; i + 1 < topo.size(); i += 2) {
    const int parent = topo[i];
    const int child = topo[i + 1];
    if (parent == child || parent < 0 || child < 0 || parent >= weight.size || child >= weight.size)
      continue;
    weight.at(parent, child) *= alpha;
    weight.at(child, parent) *= alpha;
  }
}

bool isNvlinkConnected(const LinkMatrix& weight) {
  const int n = weight.size;
  if (n == 0) return true;
  std::vector<char> visited(at(n), 0);
  std::vector<int> queue = {0};
  visited[0] = 1;
  for (std::size_t head = 0; head < queue.size(); ++head) {
    const int current = queue[head];
    for (int i = 0; i < n; ++i) {
      if (i != current && weight.at(current, i) > 1 && visited[at(i)] == 0) {
        visited[at(i)] = 1;
        queue.push_back(i);
      }
    }
  }
  return std::all_of(visited.begin(), visited.end(), [](char v) { return v != 0; });
}

void applyPcieRule(LinkMatrix& weight) {
  const double replacement = isNvlinkConnected(weight) ? 0.0 : 1.0 / weight.size;
  for (double& value : weight.weights)
    if (value == 1) value = replacement;
}

double sumTreeWeight(const LinkMatrix& weight, const Tree& tree) {
  double total = 0;
  for (const TreeEdge& edge : listTreeEdges(tree))
    total += weight.at(edge.parent, edge.child);
  return total;
}

std::vector<std::vector<int>> countLinkUsage(const std::vector<Tree>& trees, int ranks) {
  std::vector<std::vector<int>> usage(at(ranks), std::vector<int>(at(ranks), 0));
  for (const Tree& tree : trees) {
    for (std::size_t i = 1; i + 1 < tree.topo.size(); i += 2) {
      const int a = tree.topo[i];
      const int b = tree.topo[i + 1];
      if (a == b) continue;
      ++usage[at(a)][at(b)];
      ++usage[at(b)][at(a)];
    }
  }
  return usage;
}

LinkUse findMostUsedLink(const std::vector<std::vector<int>>& usage) {
  LinkUse most;
  for (std::size_t a = 0; a < usage.size(); ++a) {
    for (std::size_t b = a + 1; b < usage[a].size(); ++b) {
      if (usage[a][b] > most.count) {
        most = {static_cast<int>(a), static_cast<int>(b), usage[a][b]};
      }
    }
  }
  return most;
}

std::optional<Tree> backtrackTree(const LinkMatrix& weight, int root, bool optimal,
                                  std::uint64_t budget) {
  const int depth = computeDepth(weight.size);
  std::vector<int> best;
  double bestWeight = std::numeric_limits<double>::lowest();
  searchLeaves(weight, root, depth, budget, [&](const std::vector<int>& leaves) {
    const double score = computeTreeWeight(weight, leaves, depth, /*penalty=*/true);
    if (score > bestWeight) {
      bestWeight = score;
      best = leaves;
    }
    return optimal;
  });
  if (best.empty()) return std::nullopt;
  std::optional<Tree> tree = formTopology(best, depth);
  if (tree) tree->method = TreeMethod::backtracking;
  return tree;
}

std::optional<Tree> kernighanLinTree(const LinkMatrix& weight, int root, std::uint32_t seed,
                                     int maxResets, bool deferSmallClusters) {
  std::mt19937 gen(seed);
  Clustering clustering;
  std::vector<int> roots;
  std::vector<int> topo;
  std::vector<int> scan;
  bool stop = false;
  bool reset = true;
  int failures = 0;
  while (!stop || reset) {
    if (reset) {
      clustering = initialClustering(weight.size);
      roots = {root};
      topo = {root};
      scan = {0};
    }
    stop = splitClusters(weight, clustering, gen);
    reset = growTreeLevel(weight, clustering, roots, topo, scan, gen, deferSmallClusters && !stop);
    if (reset) ++failures;
    if (failures > maxResets) break;
  }
  if (reset) return std::nullopt;
  scan.push_back(static_cast<int>(topo.size()));
  return Tree{root, std::move(topo), std::move(scan), TreeMethod::kernighanLin};
}

TreeSet computeTrees(const LinkMatrix& weights, const TreeOptions& options) {
  validateLinkMatrix(weights, "link matrix");
  if (!(options.penalty > 0 && options.penalty <= 1)) {
    throw OptionError(fmt::format(
        "the link-usage penalty is {}; use a factor in (0, 1] (MXNet's default is 0.7, 1 = no "
        "penalty)",
        options.penalty));
  }
  if (options.seeds < 1 || options.maxResets < 0) {
    throw OptionError(fmt::format("tree options need seeds >= 1 and maxResets >= 0 (got {}, {})",
                                  options.seeds, options.maxResets));
  }
  requireConnected(weights);
  TreeSet set;
  set.strategy = options.strategy;
  set.weights = weights;
  const std::vector<Tree> mxnetTrees = computeMxnetTrees(weights, options);
  set.trees = options.strategy == TreeStrategy::mxnet
                  ? mxnetTrees
                  : computeBestTrees(weights, mxnetTrees, options);
  for (const Tree& tree : set.trees) {
    set.treeWeights.push_back(sumTreeWeight(weights, tree));
    set.totalWeight += set.treeWeights.back();
  }
  set.usage = countLinkUsage(set.trees, weights.size);
  set.mostUsed = findMostUsedLink(set.usage);
  return set;
}

std::string formatTree(const Tree& tree) {
  std::string out = "topo";
  const int depth = treeDepth(tree);
  for (int level = 0; level <= depth; ++level) {
    if (level > 0) out += " |";
    for (int i = tree.scan[at(level)]; i < tree.scan[at(level + 1)]; ++i)
      out += fmt::format(" {}", tree.topo[at(i)]);
  }
  out += '\n';
  std::map<int, std::string> levels;
  for (const TreeEdge& edge : listTreeEdges(tree))
    levels[edge.level] += fmt::format(" {}-{}", edge.parent, edge.child);
  for (int level = 1; level <= depth; ++level) {
    const auto found = levels.find(level);
    out += fmt::format("level {}:{}\n", level, found == levels.end() ? " (none)" : found->second);
  }
  return out;
}

}  // namespace chorus::synth
