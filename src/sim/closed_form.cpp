// Closed-form α-β-γ costs of the library algorithms as chorus compiles them (xCCL notes; the
// rows of docs/sources.md "α-β-γ closed forms", quoted below by name), on the machine of
// topology::uniformTopology: every rank pair has its own duplex link, a send of B bytes keeps its
// threadblock busy B·β and arrives α later, a reduction of B bytes costs B·γ, copies are free,
// threadblocks run concurrently, one message per chunk (no tiling).
//
// Exact forms, not the paper's rounded ones, in two respects:
//   1. Bytes: a chunk is ⌈count / q⌉ elements (the interpreter's chunking, which the simulator
//      shares): count is the per-block element count of perf::shapeFor, q the chunks per block.
//      For a power-of-two p and n = 2^k bytes this is exactly n/p (or n); otherwise it rounds.
//   2. Ports: threadblocks with different peers overlap on the uniform fabric, so algorithms
//      whose steps to different peers sit in different threadblocks (direct, pairwise,
//      scatter-destination, binomial fan-out, Bruck rounds without a data dependency) pay one
//      α and one message's β where the paper's one-port model pays p−1 or ⌈lg p⌉ of them.
// Where the compiler's fusion or per-threadblock step order decides the time (binomial
// broadcast and allreduce; the halving/doubling allreduces, allgather and reduce-scatter, all at
// non-powers of two; the recursive-doubling reduce-scatter at every p), there is no form
// (nullopt).
//
// With AlphaBetaGamma::onePort the forms are those of the one-port machine instead
// (uniformTopology(..., sendPorts = 1), the closed forms' model): a rank's sends take turns and
// each holds the port until its message arrived. The halving/doubling forms still need a power
// of two; binomial broadcast and allreduce have one-port forms at any p.
#include "sim/closed_form.h"

#include <algorithm>
#include <bit>
#include <functional>
#include <tuple>
#include <vector>

#include "perf/collective.h"

namespace chorus::sim {
namespace {

constexpr std::size_t kElementSize = 4;  // float32, the simulator's default element

struct Call {
  int p = 0;
  std::uint64_t bytes = 0;
  AlphaBetaGamma cost;
};

bool isPowerOfTwo(int p) {
  return std::has_single_bit(static_cast<unsigned>(p));
}
int floorLog2(int p) {
  return std::bit_width(static_cast<unsigned>(p)) - 1;
}
int ceilLog2(int p) {
  return std::bit_width(static_cast<unsigned>(p - 1));
}

// Bytes of one chunk when each of the collective's blocks is cut into `chunksPerBlock` chunks
// (the interpreter's rounding up; the block is perf::shapeFor's per-block count).
double chunkBytes(perf::Collective collective, const Call& call, int chunksPerBlock) {
  const perf::CollectiveShape shape = perf::shapeFor(collective, call.bytes, kElementSize, call.p);
  const std::size_t q = static_cast<std::size_t>(chunksPerBlock);
  return static_cast<double>((shape.count + q - 1) / q * kElementSize);
}

// (α, β, γ) for structured bindings.
std::tuple<double, double, double> terms(const AlphaBetaGamma& cost) {
  return {cost.alpha, cost.beta, cost.gamma};
}

using Form = std::function<std::optional<double>(const Call&)>;

// ---- rings (GC3 Figure 3(b); rows "Allreduce ring", "Allgather ring") -----------------------

// 2(p−1)(α + cβ) + (p−1)cγ, c = ⌈n/p⌉: the paper's 2(p−1)α + 2(p−1)/p·nβ + (p−1)/p·nγ with
// the chunk rounded as the runtime rounds it. Each step forwards as soon as it received.
std::optional<double> allReduceRing(const Call& call) {
  const double c = chunkBytes(perf::Collective::allreduce, call, call.p);
  const auto [a, b, g] = terms(call.cost);
  return 2 * (call.p - 1) * (a + c * b) + (call.p - 1) * c * g;
}

// (p−1)(α + cβ), c = the block: row "Allgather ring" (p−1)α + (p−1)/p·nβ.
std::optional<double> allGatherRing(const Call& call) {
  const double c = chunkBytes(perf::Collective::allgather, call, 1);
  return (call.p - 1) * (call.cost.alpha + c * call.cost.beta);
}

// (p−1)(α + c(β + γ)), GC3 Figure 3(b): the cost of row "Reduce-scatter pairwise
// exchange" row, (p−1)α + (p−1)/p·n(β + γ), with the block rounded.
std::optional<double> reduceScatterRing(const Call& call) {
  const double c = chunkBytes(perf::Collective::reducescatter, call, 1);
  return (call.p - 1) * (call.cost.alpha + c * (call.cost.beta + call.cost.gamma));
}

// ---- one-step and per-peer-threadblock algorithms (xCCL notes; MVAPICH all-to-all Table I) --

// α + cβ: every peer's block leaves on its own link at once. The paper's pairwise exchange,
// (p−1)α + nβ, assumes one port and counts the rank's own block as sent.
std::optional<double> oneMessagePerPeer(perf::Collective collective, const Call& call) {
  const double c = chunkBytes(collective, call, 1);
  return call.cost.alpha + c * call.cost.beta;
}

// α + cβ + (p−1)cγ: the blocks arrive together; the receiver sums them one after the other
// (rank order, one destination chunk). Row "Reduce-scatter pairwise exchange": (p−1)α +
// (p−1)/p·n(β + γ).
std::optional<double> reduceScatterPerPeer(const Call& call) {
  const double c = chunkBytes(perf::Collective::reducescatter, call, 1);
  const auto [a, b, g] = terms(call.cost);
  return a + c * b + (call.p - 1) * c * g;
}

// α + nβ + (p−1)nγ: everyone sends the whole buffer to everyone (xCCL notes: direct AllReduce).
std::optional<double> allReduceOneShot(const Call& call) {
  const double n = chunkBytes(perf::Collective::allreduce, call, 1);
  const auto [a, b, g] = terms(call.cost);
  return a + n * b + (call.p - 1) * n * g;
}

// ---- Bruck (MVAPICH all-to-all Table I; rows "Allgather Bruck", "Alltoall Bruck"), radix 2 --

// Round h = 1, 2, 4, ... sends W[0, min(h, p−h)) to r−h. A round needs only the rounds that
// filled what it sends (h' < min(h, p−h)), so a short last round overlaps the others:
//   finish(h) = max{finish(h') : h' < min(h, p−h)} + α + min(h, p−h)·cβ; T = max finish(h).
// For p = 2^k this is the paper's ⌈lg p⌉α + (p−1)/p·nβ.
std::optional<double> allGatherBruck(const Call& call) {
  const double c = chunkBytes(perf::Collective::allgather, call, 1);
  std::vector<std::pair<int, double>> finished;  // (h, finish)
  double total = 0;
  for (int h = 1; h < call.p; h *= 2) {
    const int count = std::min(h, call.p - h);
    double start = 0;
    for (const auto& [earlier, finish] : finished)
      if (earlier < count) start = std::max(start, finish);
    const double finish = start + call.cost.alpha + count * c * call.cost.beta;
    finished.emplace_back(h, finish);
    total = std::max(total, finish);
  }
  return total;
}

// Round x sends the blocks i ∈ [1, p) with bit x set, m_x = |{i}| blocks, as one message to
// r + 2^x. Block i is ready for round x once the round of its highest set bit below x is done:
//   finish(x) = max{finish(y) : y = highest set bit of (i mod 2^x), i with bit x} + α + m_x·cβ.
// The paper's lg p·α + (n/2)·lg p·β rounds m_x up to p/2 and serializes every round.
std::optional<double> allToAllBruck(const Call& call) {
  const double c = chunkBytes(perf::Collective::alltoall, call, 1);
  const int rounds = ceilLog2(call.p);
  std::vector<double> finish(static_cast<std::size_t>(rounds), 0);
  double total = 0;
  for (int x = 0; x < rounds; ++x) {
    int blocks = 0;
    double start = 0;
    for (int i = 1; i < call.p; ++i) {
      if (((i >> x) & 1) == 0) continue;
      ++blocks;
      const int lower = i & ((1 << x) - 1);
      if (lower != 0) start = std::max(start, finish[static_cast<std::size_t>(floorLog2(lower))]);
    }
    finish[static_cast<std::size_t>(x)] = start + call.cost.alpha + blocks * c * call.cost.beta;
    total = std::max(total, finish[static_cast<std::size_t>(x)]);
  }
  return total;
}

// ---- binomial trees (xCCL notes Binomial Tree; rows "Bcast binomial", "Reduce binomial") ----

// When relative rank v's accumulation of its subtree is final: its children v + m (m = 1, 2,
// ... below v's lowest set bit, any m for the root) each deliver their partial
// S(child) + nβ + α, and v adds them in order of m, nγ each. Leaves send their input at 0.
std::vector<double> binomialReduceFinish(int p, double n, const AlphaBetaGamma& cost) {
  std::vector<double> finish(static_cast<std::size_t>(p), 0);
  for (int v = p - 1; v >= 0; --v) {
    const int limit = v == 0 ? p : (v & -v);
    double t = 0;
    for (int m = 1; m < limit && v + m < p; m *= 2) {
      const double arrival = finish[static_cast<std::size_t>(v + m)] + n * cost.beta + cost.alpha;
      t = std::max(t, arrival) + n * cost.gamma;
    }
    finish[static_cast<std::size_t>(v)] = t;
  }
  return finish;
}

// S(root) of binomialReduceFinish, any p: ⌈lg p⌉(α + nβ + nγ) when p = 2^k (the paper's row);
// at other p shallower subtrees arrive early and only the γ terms stay serial.
std::optional<double> reduceBinomial(const Call& call) {
  const double n = chunkBytes(perf::Collective::reduce, call, 1);
  return binomialReduceFinish(call.p, n, call.cost).front();
}

// lg p(α + nβ), p = 2^k: a node forwards to its children in parallel threadblocks; the
// receive fused with the first child's send delays the others by nβ, never past the deepest
// leaf. At other p that delay can decide the time (depends on fusion): no form.
std::optional<double> broadcastBinomial(const Call& call) {
  if (!isPowerOfTwo(call.p)) return std::nullopt;
  const double n = chunkBytes(perf::Collective::broadcast, call, 1);
  return floorLog2(call.p) * (call.cost.alpha + n * call.cost.beta);
}

// Reduce to rank 0 then broadcast, p = 2^k: 2 lg p(α + nβ) + lg p·nγ (xCCL notes "Reduce then
// Broadcast"); at other p the root's fused last reduction delays its other sends: no form.
std::optional<double> allReduceBinomial(const Call& call) {
  if (!isPowerOfTwo(call.p)) return std::nullopt;
  const double n = chunkBytes(perf::Collective::allreduce, call, 1);
  const auto [a, b, g] = terms(call.cost);
  const int lg = floorLog2(call.p);
  return 2 * lg * (a + n * b) + lg * n * g;
}

// Pipelined chain of k = 8 pieces (the default `pipeline`): (p−1)(α + cβ) + (k−1)cβ with
// c = ⌈n/k⌉; the paper-style (p + k − 2)(α + n/k·β) pays α per piece, but a sender pushes its
// next piece while the previous one is in flight.
std::optional<double> broadcastChain(const Call& call) {
  constexpr int kPieces = 8;
  const double c = chunkBytes(perf::Collective::broadcast, call, kPieces);
  return (call.p - 1) * (call.cost.alpha + c * call.cost.beta) + (kPieces - 1) * c * call.cost.beta;
}

// ---- halving / doubling (xCCL notes; rows as named) ------------------------------------------

// lg p(α + nβ + nγ), p = 2^k: row "Allreduce recursive doubling" exactly. At other p the
// fold and unfold overlap the core rounds depending on each threadblock's step order: no form.
std::optional<double> allReduceRecursiveDoubling(const Call& call) {
  if (!isPowerOfTwo(call.p)) return std::nullopt;
  const double n = chunkBytes(perf::Collective::allreduce, call, 1);
  const auto [a, b, g] = terms(call.cost);
  return floorLog2(call.p) * (a + n * b + n * g);
}

// 2 lg p·α + 2(p−1)cβ + (p−1)cγ, c = ⌈n/p⌉, p = 2^k: row "Allreduce Rabenseifner". At
// other p the all-gather exchange with a folded rank can run in series (step order): no form.
std::optional<double> allReduceRabenseifner(const Call& call) {
  if (!isPowerOfTwo(call.p)) return std::nullopt;
  const double c = chunkBytes(perf::Collective::allreduce, call, call.p);
  const auto [a, b, g] = terms(call.cost);
  return 2 * floorLog2(call.p) * a + 2 * (call.p - 1) * c * b + (call.p - 1) * c * g;
}

// P = 2^⌊lg p⌋ core, c = ⌈n/P⌉: recursive halving lg P·α + (P−1)c(β + γ), then the binomial
// gather lg P·α + (P−1)cβ (row "Reduce: reduce-scatter + binomial gather"); at other p
// the extras' fold comes first, α + P·c(β + γ) (MPICH's pre step; P·c ≈ n).
std::optional<double> reduceRabenseifner(const Call& call) {
  const int core = 1 << floorLog2(call.p);
  const double c = chunkBytes(perf::Collective::reduce, call, core);
  const auto [a, b, g] = terms(call.cost);
  double total = 2 * floorLog2(core) * a + 2 * (core - 1) * c * b + (core - 1) * c * g;
  if (core != call.p) total += a + core * c * (b + g);
  return total;
}

// lg p·α + (p−1)cβ, p = 2^k: row "Allgather recursive doubling". Non-powers: the core's
// ranges differ in size per member and the exchanges' step order decides: no form.
std::optional<double> allGatherRecursiveDoubling(const Call& call) {
  if (!isPowerOfTwo(call.p)) return std::nullopt;
  const double c = chunkBytes(perf::Collective::allgather, call, 1);
  return floorLog2(call.p) * call.cost.alpha + (call.p - 1) * c * call.cost.beta;
}

// lg p·α + (p−1)c(β + γ), p = 2^k: row "Reduce-scatter recursive halving". Non-powers
// as allGatherRecursiveDoubling: no form.
std::optional<double> reduceScatterRecursiveHalving(const Call& call) {
  if (!isPowerOfTwo(call.p)) return std::nullopt;
  const double c = chunkBytes(perf::Collective::reducescatter, call, 1);
  const auto [a, b, g] = terms(call.cost);
  return floorLog2(call.p) * a + (call.p - 1) * c * (b + g);
}

// reducescatter.recursive-doubling: no form. Each round costs α + (p − m)c(β + γ) in the
// paper's model (row "Reduce-scatter recursive doubling (non-commutative)"), but a rank
// reduces the received range in up to two pieces (where it wraps in the rank's rotated buffer),
// and whether the compiler puts them on one threadblock or two decides how much of that γ
// overlaps: the simulator comes in below the row by 1 block's γ at p = 8 and 3 at p = 16
// (SimSynthRow bounds it).

// ---- one port (the closed forms' model: DeviceModel::sendPorts == 1) -------------------------
// A rank's sends take turns: each holds the port from its start until its message arrived, so
// every send costs α + Bβ of the rank's time. Algorithms whose ranks never have two sends
// ready at once (rings, recursive halving and doubling, Rabenseifner; binomial reduce, where a
// rank sends once) keep their multi-port forms (entries() reuses them); those below change.

// (p−1)(α + cβ), c = the block: row "Alltoall pairwise exchange" (p−1)α + nβ, whose nβ
// counts the rank's own block; exact is (p−1)/p·nβ. Also the direct and scatter-destination
// alltoalls and allgather.direct (whose cost is the "Allgather ring" row): any p.
std::optional<double> onePortPerPeer(perf::Collective collective, const Call& call) {
  const double c = chunkBytes(collective, call, 1);
  return (call.p - 1) * (call.cost.alpha + c * call.cost.beta);
}

// ⌈lg p⌉α + (p−1)cβ: row "Allgather Bruck" with the block rounded, any p. The rounds
// take turns on the port, which is never idle (every rank runs the same schedule, so what a
// round forwards arrived by the end of the rank's previous send), and a short last round no
// longer overlaps the others.
std::optional<double> allGatherBruckOnePort(const Call& call) {
  const double c = chunkBytes(perf::Collective::allgather, call, 1);
  return ceilLog2(call.p) * call.cost.alpha + (call.p - 1) * c * call.cost.beta;
}

// Σ_x (α + m_x·cβ), m_x = |{i ∈ [1, p) : bit x of i set}|: the rounds take turns on the port,
// never idle. For p = 2^k, m_x = p/2 and c = n/p: row "Alltoall Bruck" lg p·α +
// (n/2)·lg p·β exactly; at other p the paper's p/2 rounds m_x up.
std::optional<double> allToAllBruckOnePort(const Call& call) {
  const double c = chunkBytes(perf::Collective::alltoall, call, 1);
  double total = 0;
  for (int x = 0; x < ceilLog2(call.p); ++x) {
    int blocks = 0;
    for (int i = 1; i < call.p; ++i)
      blocks += (i >> x) & 1;
    total += call.cost.alpha + blocks * c * call.cost.beta;
  }
  return total;
}

// ⌈lg p⌉(α + nβ), any p: row "Bcast binomial" lg p·α + lg p·nβ. A node serves its
// children largest subtree first, so a subtree of depth d is done d(α + nβ) after its root
// received: the farthest child's threadblock holds the copy or receive the others wait on,
// and those others, ready at once, get the port from the highest threadblock (the farthest
// child) down: the simulator's order for simultaneous requests.
std::optional<double> broadcastBinomialOnePort(const Call& call) {
  const double n = chunkBytes(perf::Collective::broadcast, call, 1);
  return ceilLog2(call.p) * (call.cost.alpha + n * call.cost.beta);
}

// (p + k − 2)(α + cβ), c = ⌈n/k⌉, k = 8 pieces: no row; the textbook pipelined
// chain. Unlike the multi-port form a sender cannot push its next piece while the previous
// one is in flight, so every piece pays α.
std::optional<double> broadcastChainOnePort(const Call& call) {
  constexpr int kPieces = 8;
  const double c = chunkBytes(perf::Collective::broadcast, call, kPieces);
  return (call.p + kPieces - 2) * (call.cost.alpha + c * call.cost.beta);
}

// (p−1)(α + cβ) + (p−1)cγ: row "Reduce-scatter pairwise exchange" (p−1)α +
// (p−1)/p·n(β + γ) with the block rounded, any p; also reducescatter.direct. A receiver sums
// in a fixed order whose first message arrives last (pairwise: step 1's threadblock copies
// the own block first and asks for the port last; direct: every rank serves its peers in the
// same order, so one receiver gets all its blocks last), so all p−1 reductions follow the
// last arrival.
std::optional<double> reduceScatterPerPeerOnePort(const Call& call) {
  const double c = chunkBytes(perf::Collective::reducescatter, call, 1);
  const auto [a, b, g] = terms(call.cost);
  return (call.p - 1) * (a + c * b) + (call.p - 1) * c * g;
}

// (p−1)(α + nβ + nγ), any p: no row. The reductions are in place, so the first one
// waits for the rank's own p−1 sends of the buffer, (p−1)(α + nβ), and the rest follow in turn.
std::optional<double> allReduceOneShotOnePort(const Call& call) {
  const double n = chunkBytes(perf::Collective::allreduce, call, 1);
  const auto [a, b, g] = terms(call.cost);
  return (call.p - 1) * (a + n * b + n * g);
}

// S(root) + ⌈lg p⌉(α + nβ), any p: binomial reduce (binomialReduceFinish: each rank sends
// once, so the port changes nothing) then the one-port binomial broadcast; for p = 2^k the
// rows "Reduce binomial" + "Bcast binomial", 2 lg p(α + nβ) + lg p·nγ.
std::optional<double> allReduceBinomialOnePort(const Call& call) {
  const double n = chunkBytes(perf::Collective::allreduce, call, 1);
  return binomialReduceFinish(call.p, n, call.cost).front() +
         ceilLog2(call.p) * (call.cost.alpha + n * call.cost.beta);
}

// An algorithm's forms: multi-port (the uniform fabric) and one-port; empty when unknown.
struct Entry {
  std::string_view name;
  Form multiPort;
  Form onePort;
};

const std::vector<Entry>& entries() {
  const auto perPeer = [](perf::Collective collective) {
    return [collective](const Call& call) { return oneMessagePerPeer(collective, call); };
  };
  const auto perPeerOnePort = [](perf::Collective collective) {
    return [collective](const Call& call) { return onePortPerPeer(collective, call); };
  };
  using perf::Collective;
  static const std::vector<Entry> table = {
      {"allgather.bruck", allGatherBruck, allGatherBruckOnePort},
      {"allgather.direct", perPeer(Collective::allgather), perPeerOnePort(Collective::allgather)},
      {"allgather.recursive-doubling", allGatherRecursiveDoubling, allGatherRecursiveDoubling},
      {"allgather.ring", allGatherRing, allGatherRing},
      {"allreduce.binomial", allReduceBinomial, allReduceBinomialOnePort},
      {"allreduce.oneshot", allReduceOneShot, allReduceOneShotOnePort},
      {"allreduce.rabenseifner", allReduceRabenseifner, allReduceRabenseifner},
      {"allreduce.recursive-doubling", allReduceRecursiveDoubling, allReduceRecursiveDoubling},
      {"allreduce.ring", allReduceRing, allReduceRing},
      {"alltoall.bruck", allToAllBruck, allToAllBruckOnePort},
      {"alltoall.direct", perPeer(Collective::alltoall), perPeerOnePort(Collective::alltoall)},
      {"alltoall.pairwise", perPeer(Collective::alltoall), perPeerOnePort(Collective::alltoall)},
      {"alltoall.scatter-destination", perPeer(Collective::alltoall),
       perPeerOnePort(Collective::alltoall)},
      {"broadcast.binomial", broadcastBinomial, broadcastBinomialOnePort},
      {"broadcast.chain", broadcastChain, broadcastChainOnePort},
      {"reduce.binomial", reduceBinomial, reduceBinomial},
      {"reduce.rabenseifner", reduceRabenseifner, reduceRabenseifner},
      {"reducescatter.direct", reduceScatterPerPeer, reduceScatterPerPeerOnePort},
      {"reducescatter.pairwise", reduceScatterPerPeer, reduceScatterPerPeerOnePort},
      {"reducescatter.recursive-halving", reduceScatterRecursiveHalving,
       reduceScatterRecursiveHalving},
      {"reducescatter.ring", reduceScatterRing, reduceScatterRing},
  };
  return table;
}

}  // namespace

std::optional<double> closedFormSeconds(std::string_view name, int p, std::uint64_t bytes,
                                        const AlphaBetaGamma& cost) {
  if (p < 2 || bytes == 0) return std::nullopt;
  for (const Entry& entry : entries())
    if (entry.name == name) {
      const Form& form = cost.onePort ? entry.onePort : entry.multiPort;
      if (!form) return std::nullopt;
      return form(Call{.p = p, .bytes = bytes, .cost = cost});
    }
  return std::nullopt;
}

std::vector<std::string_view> closedFormNames() {
  std::vector<std::string_view> names;
  for (const Entry& entry : entries())
    names.push_back(entry.name);
  return names;
}

}  // namespace chorus::sim
