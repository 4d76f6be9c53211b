// Topology-aware binary trees for AllReduce (MXNet trees: MXNet's KVStore "tree" backend;
// docs/sources.md "MXNet tree backend"): one balanced binary spanning tree per root GPU, built by
// recursive Kernighan-Lin bisection of a link-weight matrix with an exhaustive fallback, and a
// link-usage penalty between trees. strategy mxnet reproduces MXNet; strategy best searches
// further.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "synth/link_matrix.h"

namespace chorus::synth {

inline constexpr int kMaxTreeDepth = 16;  // MXNET_KVSTORE_MAXDEPTH

enum class TreeMethod {
  kernighanLin,  // recursive bisection (MXNet KernighanLin)
  backtracking,  // exhaustive search (MXNet BacktrackGenerateBinaryTree)
  search,        // strategy best: chosen among many candidate trees
};
std::string_view treeMethodName(TreeMethod method);  // "kernighan-lin", "backtracking", "search"

// A binary tree stored in an array (MXNet FormTopology). Level l (0 = the root) occupies
// topo[scan[l] .. scan[l+1]); the two children of slot k of level l-1 are slots 2k and 2k+1 of
// level l; the left child is always the parent itself (a GPU keeps its data) and the right child
// is the GPU it exchanges with at that level, or the parent again for "no transfer".
// topo has 2^(d+1) - 1 entries and scan d + 2 for a tree of depth d.
struct Tree {
  int root = 0;
  std::vector<int> topo;
  std::vector<int> scan;
  TreeMethod method = TreeMethod::kernighanLin;
  friend bool operator==(const Tree&, const Tree&) = default;
};

// One transfer of a tree: at `level` (1..depth) `child` sends its partial sum to `parent`
// (reduce) and later receives the result from it (broadcast).
struct TreeEdge {
  int level = 0;
  int parent = 0;
  int child = 0;
  friend bool operator==(const TreeEdge&, const TreeEdge&) = default;
};

int treeDepth(const Tree& tree);                        // scan.size() - 2
std::vector<int> listTreeLeaves(const Tree& tree);      // the last level (2^depth entries)
std::vector<TreeEdge> listTreeEdges(const Tree& tree);  // non-self slot pairs, by level then slot

// Empty when `tree` is a spanning tree of `ranks` GPUs that reduces every GPU's data into the
// root exactly once: array shape, ids in range, left child = parent, every GPU reached once,
// each GPU first appearing as the right child of exactly one transfer. Otherwise what is wrong.
std::string describeTreeProblem(const Tree& tree, int ranks);

// ---- MXNet's building blocks (gpu_topology.h), exposed for gpu_topology_test.cc's vectors --

// Smallest d >= 1 with 2^d >= n (at most kMaxTreeDepth): ComputeDepth.
int computeDepth(int n);

// The tree whose last level is `leaves` (2^depth entries): FormTopology. nullopt when a leaf is
// -1 (unplaced).
std::optional<Tree> formTopology(const std::vector<int>& leaves, int depth);

// Sum of weight[from][dest] over the non-self pairs of every level of a leaf vector; with
// `penalty`, -100 for each link used twice in the tree (either direction) and -10 for each GPU
// seen twice at one level above the leaves: ComputeTreeWeight.
double computeTreeWeight(const LinkMatrix& weight, const std::vector<int>& leaves, int depth,
                         bool penalty);

// Turns redundant repeated sends of a leaf vector into self-sends: Postprocess. Entries must be
// in [0, ranks).
void postprocessLeaves(std::vector<int>& leaves, int ranks, int depth);

// Whether the first `row` entries of `state` (-1 = unplaced) can still become a valid tree:
// IsValid. Every complete non-self pair must have weight > 0, ids < n, between row - (2^d - n)
// and row distinct GPUs while row < n, and every GPU present when row == state.size().
// (MXNet reads out of bounds for a pair with an unplaced end; chorus skips such pairs.)
bool isValidState(const LinkMatrix& weight, const std::vector<int>& state, int row, int depth);

// Kernighan-Lin move (FindBestMove): over pairs row < col on opposite, non-zero sides with row
// not locked, the largest gain d[row] + d[col] - 2 w[row][col] if it is > 0; a = b = -1, gain 0
// when none. (As in MXNet, only the first vertex of a pair is checked against `locked`.)
struct KLMove {
  int a = -1;
  int b = -1;
  double gain = 0;
};
KLMove findBestMove(const LinkMatrix& weight, const std::vector<int>& side,
                    const std::vector<double>& d, const std::vector<char>& locked);

// The heaviest links from `parent` into `cluster` (FindBestEdge): candidates in index order with
// the maximal weight. MXNet's encoding is kept: candidates start with -1 when no link has a
// weight > 0 ({-1} when the cluster is empty).
struct BestEdge {
  std::vector<int> candidates;
  double weight = 0;
};
BestEdge findBestEdge(const LinkMatrix& weight, const std::vector<int>& color, int parent,
                      int cluster);

// A pair of clusters to join with one edge: second >= 0 is the cluster split off `first` by this
// round; second = -1 or -2 marks `first` as an unsplit cluster of that many GPUs.
struct ClusterPair {
  int first = 0;
  int second = 0;
  friend bool operator==(const ClusterPair&, const ClusterPair&) = default;
};

// The clustering state of recursive bisection.
struct Clustering {
  std::vector<int> color;  // cluster of each GPU
  int clusters = 1;
  std::vector<ClusterPair> pairs;  // appended by splitClusters, consumed by growTreeLevel
};
Clustering initialClustering(int ranks);  // every GPU in cluster 0

// One Kernighan-Lin round (KernighanLin): every cluster of more than 2 GPUs is shuffled with
// `gen`, cut in half and refined by KL passes; the second half becomes a new cluster. Returns
// true (stop) when no cluster had more than 2 GPUs.
bool splitClusters(const LinkMatrix& weight, Clustering& clustering, std::mt19937& gen);

// Appends one tree level (KLGenerateBinaryTree): for each pair, the root of one side links to
// the heaviest GPU of the other side (ties shuffled with `gen`), which becomes that side's root.
// Returns true (reset) when a pair has no root or no positive link. With `deferSmallClusters`
// (strategy best, set while another level follows) clusters of 1-2 GPUs send to themselves and
// keep their root for the next level; MXNet drops their roots, so KL always fails for n = 5,
// 9, 10 and 11.
bool growTreeLevel(const LinkMatrix& weight, Clustering& clustering, std::vector<int>& roots,
                   std::vector<int>& topo, std::vector<int>& scan, std::mt19937& gen,
                   bool deferSmallClusters = false);

// Multiplies weight[p][c] and weight[c][p] by `alpha` for each non-self pair (topo[i],
// topo[i+1]), i odd: UpdateWeight.
void penalizeTreeLinks(LinkMatrix& weight, const std::vector<int>& topo, double alpha);

// Whether the links with weight > 1 (NVLink) connect every GPU: IsConnected.
bool isNvlinkConnected(const LinkMatrix& weight);

// MXNet's PCIe rule (GetP2PWeight in gpu_topology.h): if NVLink alone connects the GPUs, every
// weight of exactly 1 (PCIe) becomes 0 (forbidden); otherwise it becomes 1/n (discouraged).
void applyPcieRule(LinkMatrix& weight);

// ---- Tree construction --------------------------------------------------------------------

enum class TreeStrategy {
  mxnet,  // MXNet's ComputeTrees, step for step (std::mt19937 gen(1) per root)
  // A search over many candidate trees that never loses to MXNet's trees on total weight or max
  // link usage (when MXNet's trees use only links of weight > 0), and never uses such links.
  best,
};
std::string_view treeStrategyName(TreeStrategy strategy);  // "mxnet", "best"
// "mxnet" or "best"; throws OptionError naming both.
TreeStrategy parseTreeStrategy(std::string_view name);

// What strategy best ranks first among the tree sets that are no worse than MXNet's on both
// measures; the other measure breaks ties.
enum class TreePreference {
  usage,   // lowest max link usage, then highest total weight
  weight,  // highest total weight, then lowest max link usage
};
std::string_view treePreferenceName(TreePreference preference);  // "usage", "weight"
// "usage" or "weight"; throws OptionError naming both.
TreePreference parseTreePreference(std::string_view name);

struct TreeOptions {
  TreeStrategy strategy = TreeStrategy::best;
  TreePreference prefer = TreePreference::usage;  // strategy best only
  double penalty = 0.7;        // MXNET_KVSTORE_TREE_LINK_USAGE_PENALTY, in (0, 1]
  bool backtrackOnly = false;  // MXNET_KVSTORE_TREE_BACKTRACK=1: skip Kernighan-Lin
  int maxResets = 10;          // KL restarts before backtracking
  int seeds = 64;              // strategy best: KL seeds tried per root
  // Validity checks (isValidState calls) one backtracking search may spend before giving up.
  std::uint64_t searchBudget = 20'000'000;
};

// The most-used link: the lowest (a, b), a < b, among the links used by the most trees.
struct LinkUse {
  int a = 0;
  int b = 0;
  int count = 0;
};

struct TreeSet {
  TreeStrategy strategy = TreeStrategy::best;
  LinkMatrix weights;                   // the matrix the trees were built from (no penalties)
  std::vector<Tree> trees;              // trees[r].root == r
  std::vector<double> treeWeights;      // sumTreeWeight(weights, trees[r])
  std::vector<std::vector<int>> usage;  // countLinkUsage(trees, n)
  double totalWeight = 0;
  LinkUse mostUsed;
};

// Sum of weight over the tree's transfers (no penalties).
double sumTreeWeight(const LinkMatrix& weight, const Tree& tree);

// How many trees use each link (either direction), as an n x n symmetric matrix.
std::vector<std::vector<int>> countLinkUsage(const std::vector<Tree>& trees, int ranks);
LinkUse findMostUsedLink(const std::vector<std::vector<int>>& usage);

// The best-weight tree (optimal) or the first valid one from `root` by exhaustive search
// (BacktrackGenerateBinaryTree). nullopt when none exists; throws OptionError when the search
// exceeds `budget` validity checks.
std::optional<Tree> backtrackTree(const LinkMatrix& weight, int root, bool optimal,
                                  std::uint64_t budget);

// The Kernighan-Lin tree from `root` with std::mt19937 gen(seed) (the loop of
// ComputeTreesFromRoot): nullopt after more than `maxResets` failed attempts.
std::optional<Tree> kernighanLinTree(const LinkMatrix& weight, int root, std::uint32_t seed,
                                     int maxResets, bool deferSmallClusters = false);

// One tree per root 0..n-1 (ComputeTrees). `weights` must pass validateLinkMatrix (apply the
// PCIe rule first when it holds MXNet's 1/2/3 classes). Throws OptionError when the positive
// links do not connect every GPU or a search exceeds its budget.
TreeSet computeTrees(const LinkMatrix& weights, const TreeOptions& options = {});

// The tree as text: the array by levels ("0 | 0 3 | 0 4 3 2 | ...") and one line per level.
std::string formatTree(const Tree& tree);

}  // namespace chorus::synth
