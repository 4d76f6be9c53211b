// Node-aware AllToAll algorithms for N nodes x G GPUs (rank (n,g) = n*G + g; out of place,
// chunk factor 1; chunk (m,i) of every input goes to rank (m,i)): alltoall.two-step and
// alltoall.three-step (GC3 §7.3), alltoall.eager and alltoall.hierarchical (MVAPICH all-to-all
// Algorithms 2 and 3). Chunks between GPUs of one node always go direct.
//
// Algorithm (two-step, GC3 §7.3 Figure 8):
//   1. For a destination (n,g) on another node than the source (m,i), the source first copies
//      its chunk to its local peer (m,g), into scratch slot (n,i) of (m,g).
//   2. (m,g) then sends the G chunks gathered for node n as one aggregated count-G transfer to
//      (n,g)'s output at m*G: one inter-node message per GPU pair instead of G.
//
//      node m: (m,0) (m,1) .. (m,G-1)  --gather chunks for (n,g) on (m,g)-->  (m,g).scratch
//      (m,g).scratch[n*G .. n*G+G)  ==one IB transfer==>  (n,g).output[m*G .. m*G+G)
//
//   Figure 8 indexes (m,g)'s scratch by (n,i) = n*G+i; nodes n > m shift down by one slot here
//   so the scratch holds only the (N-1)*G chunks that really pass through it.
//
//   Parameter `channels` = k (default 1: the above, unchanged): chunk factor k, so the G
//   chunks (m,g) forwards to (n,g) are G·k parts, source-GPU-major (part p of (m,i) at
//   position i·k + p, their order in (n,g)'s output). k instances each take G consecutive
//   positions, instance c those in [c·G, (c+1)·G), and run both steps on them: every source
//   copies its parts in that range to (m,g)'s scratch region of instance c, and (m,g) sends
//   the region as one count-G transfer to (n,g)'s output at m·G·k + c·G. Instance c's
//   NVLink copies (same-node chunks included) run on channel 2c, its transfers across nodes
//   on channel 2c+1. Every instance sends from (m,g) to (n,g), through GPU g's NIC, so the
//   rails stay as evenly loaded as with k = 1, each carrying 1/k per channel.
//
// Node-pair route (three-step and hierarchical): all chunks from node a's GPUs to GPUs
// [lo, lo+w) of node b cross the network as ONE message:
//   1. gather: each GPU (a,i) sends its w chunks for those GPUs (contiguous in its input) as one
//      message to the sending GPU (a,s);
//   2. transposition: (a,s) reorders them by destination GPU, T[(j−lo)·G + i] (local copies);
//   3. one inter-node transfer of G·w chunks to the receiving GPU (b,t);
//   4. scatter: (b,t) sends each destination GPU (b,j) its G chunks, T[(j−lo)·G ..), as one
//      message to output[a·G ..] (a local copy for itself; when w = 1 the compiler folds it into
//      the receive).
//
//      (a,0) (a,1) .. (a,G-1)  --gather-->  (a,s): transpose  ==IB==>  (b,t)  --scatter-->
//                                                                       (b,lo) .. (b,lo+w-1)
//
// Algorithm (three-step, msccl-tools' alltoall_a100_three_step, the three-step variant of seed
// 000 §7.3): every ordered node pair (a,b) takes one route with w = G; the N−1 remote nodes of a
// node are dealt round-robin to its GPUs (node b's traffic leaves a from GPU slot(b) mod G,
// slot(b) = b, or b−1 when b > a), so every GPU's NIC carries about (N−1)/G of them. All pairs
// run at once. One inter-node message per node pair instead of G (two-step) or G² (direct).
//
// Algorithm (hierarchical, MVAPICH all-to-all Algorithm 3 and §III-C): L = min(leaders, G) leader
// GPUs per node, leader l owning the destination GPUs [l·G/L, (l+1)·G/L) and sitting on the first
// of them. Intra-node chunks go direct; then N−1 pairwise steps between nodes: in step s node a
// routes to node a+s and receives from a−s, each leader gathering its node's chunks for its
// share of GPUs into a temp buffer, exchanging with the same leader of the peer node (threadblock
// s−1 on every leader: one send peer and one receive peer per step) and scattering what it
// receives to its local GPUs. Temp buffers alternate between two sets, so the gather of step
// s+1 overlaps the exchange of step s. leaders = G is two-step with pairwise order.
//
//      N = 4, leaders only cross nodes, pairing=shift:
//      step 1: N0 -> N1 -> N2 -> N3 -> N0     step 2: N0 <-> N2, N1 <-> N3
//      step 3: N0 -> N3 -> N2 -> N1 -> N0
//
//   Parameter `pairing` (default xor, Alg. 3 line 28 and Figure 8): in step s node a exchanges
//   with node a XOR s, both ways (step 1: N0 <-> N1, N2 <-> N3; step 2: N0 <-> N2, N1 <-> N3;
//   step 3: N0 <-> N3, N1 <-> N2). XOR needs N a power of two; for other N the build falls back
//   to shift (a -> a+s), which the listing's default then names. pairing=shift is the above.
//
//   Parameter `forward` (default chunk, Alg. 3 lines 13-24 and §III-C items 3-5): the leader
//   sends each local GPU i's w chunks for the peer's leader as their own inter-node message as
//   soon as they have arrived (no transposition), and the receiving leader scatters each chunk
//   of that message to its GPU as it lands: G inter-node messages per leader pair and step, each
//   forwarded before the next arrives. forward=aggregated is the route above (one G·w message).
//
// Algorithm (eager, MVAPICH all-to-all Algorithm 2, shift pairing for any N and G): pairwise
// AllToAll whose intra-node steps run beside the first inter-node ones. In step j rank (n,g) sends
// to the remote rank ((n + 1 + (j−1) div G) mod N, (g + (j−1)) mod G), j = 1..(N−1)G, and for j ≤
// G−1 also to its local peer (n, g+j), receiving from the mirrored ranks. Each of the two is its
// own threadblock (ids in step order, inter before intra), so step j's NVLink exchange overlaps its
// IB exchange: max(G−1, (N−1)G) steps instead of NG−1.
#include <algorithm>
#include <vector>

#include "algorithms/common.h"
#include "algorithms/families.h"

namespace chorus::algorithms {
namespace {

struct NodeShape {
  int nodes = 1;
  int gpus = 1;
  int rank(int node, int gpu) const { return node * gpus + gpu; }
};

NodeShape shapeOf(const BuildArgs& args) {
  return {.nodes = args.nodes, .gpus = args.gpusPerNode};
}

std::unique_ptr<lang::Program> newHierarchicalAllToAll(const std::string& name,
                                                       const BuildArgs& args, int chunkFactor = 1) {
  return std::make_unique<lang::Program>(name, lang::allToAll(args.ranks, chunkFactor, false),
                                         args.programOptions);
}

// Copies the chunks between the GPUs of every node (own chunk included) directly.
void exchangeInsideNodes(lang::Program& program, const NodeShape& shape) {
  for (int n = 0; n < shape.nodes; ++n) {
    for (int i = 0; i < shape.gpus; ++i) {
      for (int j = 0; j < shape.gpus; ++j) {
        program.chunk(shape.rank(n, i), lang::Buffer::input, shape.rank(n, j))
            .copy(shape.rank(n, j), lang::Buffer::output, shape.rank(n, i));
      }
    }
  }
}

// One node-pair route (see the file comment). Scratch bases: `gatherBase` (G·w chunks) and
// `wireBase` (G·w) on the sending GPU, `landBase` (G·w) on the receiving GPU.
struct PairRoute {
  int from = 0;      // node a
  int to = 0;        // node b
  int sender = 0;    // GPU s of node a that sends over the network
  int receiver = 0;  // GPU t of node b that receives and scatters
  int lo = 0;        // first destination GPU of node b
  int width = 1;     // w destination GPUs
  int gatherBase = 0;
  int wireBase = 0;
  int landBase = 0;
  lang::OpOptions wire;  // placement of the inter-node transfer
  int gatherTb = -1;     // forward=chunk: the sender receives GPU i's chunks on gatherTb + i
};

// Steps 1-2 of a route: the G·w chunks for the inter-node transfer, contiguous on the sending
// GPU (its own input block when G = 1).
lang::ChunkRef gatherAndTranspose(lang::Program& program, const NodeShape& shape,
                                  const PairRoute& route) {
  const int gpus = shape.gpus;
  const int w = route.width;
  const int sendRank = shape.rank(route.from, route.sender);
  const int firstChunk = shape.rank(route.to, route.lo);
  if (gpus == 1) return program.chunk(sendRank, lang::Buffer::input, firstChunk, w);
  for (int i = 0; i < gpus; ++i) {
    const int src = shape.rank(route.from, i);
    lang::ChunkRef row = program.chunk(src, lang::Buffer::input, firstChunk, w);
    if (w == 1) {
      row.copy(sendRank, lang::Buffer::scratch, route.wireBase + i);  // lands transposed
      continue;
    }
    if (src != sendRank) row = row.copy(sendRank, lang::Buffer::scratch, route.gatherBase + i * w);
    for (int j = 0; j < w; ++j)
      row.slice(j, 1).copy(sendRank, lang::Buffer::scratch, route.wireBase + j * gpus + i);
  }
  return program.chunk(sendRank, lang::Buffer::scratch, route.wireBase, gpus * w);
}

void routeNodePair(lang::Program& program, const NodeShape& shape, const PairRoute& route) {
  const int gpus = shape.gpus;
  const lang::ChunkRef landed = gatherAndTranspose(program, shape, route)
                                    .copy(shape.rank(route.to, route.receiver),
                                          lang::Buffer::scratch, route.landBase, route.wire);
  for (int j = 0; j < route.width; ++j) {
    landed.slice(j * gpus, gpus)
        .copy(shape.rank(route.to, route.lo + j), lang::Buffer::output, shape.rank(route.from, 0));
  }
}

// Index of remote node `other` among node `self`'s N−1 remote nodes.
int remoteSlot(int other, int self) {
  return other < self ? other : other - 1;
}

std::unique_ptr<lang::Program> buildTwoStep(const std::string& name, const BuildArgs& args) {
  const NodeShape shape = shapeOf(args);
  const int nodes = shape.nodes;
  const int gpus = shape.gpus;
  const int parts = args.param("channels");
  auto program = newHierarchicalAllToAll(name, args, parts);
  // Instance c's channel hints: none with one instance (the compiler chooses, as before).
  auto onChannel = [parts](int instance, int channel) -> lang::OpOptions {
    if (parts == 1) return {};
    return {.channel = 2 * instance + channel};
  };
  // Scratch of (m,g): one region of G parts per instance and remote node.
  auto region = [&](int instance, int slot) { return (instance * (nodes - 1) + slot) * gpus; };
  for (int n = 0; n < nodes; ++n) {
    for (int g = 0; g < gpus; ++g) {
      for (int m = 0; m < nodes; ++m) {
        for (int c = 0; c < parts; ++c) {
          for (int i = 0; i < gpus; ++i) {
            const PartRange range = partsOfInstance(i, c, gpus, parts);
            if (range.count == 0) continue;
            lang::ChunkRef piece =
                program->chunk(shape.rank(m, i), lang::Buffer::input,
                               shape.rank(n, g) * parts + range.first, range.count);
            if (n == m) {
              piece.copy(shape.rank(n, g), lang::Buffer::output,
                         shape.rank(m, i) * parts + range.first, onChannel(c, 0));
            } else {
              piece.copy(shape.rank(m, g), lang::Buffer::scratch,
                         region(c, remoteSlot(n, m)) + i * parts + range.first - c * gpus,
                         onChannel(c, 0));
            }
          }
          if (n != m) {
            program
                ->chunk(shape.rank(m, g), lang::Buffer::scratch, region(c, remoteSlot(n, m)), gpus)
                .copy(shape.rank(n, g), lang::Buffer::output, m * gpus * parts + c * gpus,
                      onChannel(c, 1));
          }
        }
      }
    }
  }
  return program;
}

std::unique_ptr<lang::Program> buildThreeStep(const std::string& name, const BuildArgs& args) {
  const NodeShape shape = shapeOf(args);
  const int gpus = shape.gpus;
  const int area = gpus * gpus;
  auto program = newHierarchicalAllToAll(name, args);
  exchangeInsideNodes(*program, shape);
  // A GPU sends for remote slots g, g+G, ... and receives for the same slots of its own node;
  // scratch: [gather, wire] per sent pair, then one landing area per received pair.
  const int sentPerGpu = (shape.nodes - 1 + gpus - 1) / gpus;
  for (int a = 0; a < shape.nodes; ++a) {
    for (int b = 0; b < shape.nodes; ++b) {
      if (a == b) continue;
      const int out = remoteSlot(b, a);
      const int in = remoteSlot(a, b);
      PairRoute route{.from = a,
                      .to = b,
                      .sender = out % gpus,
                      .receiver = in % gpus,
                      .lo = 0,
                      .width = gpus,
                      .gatherBase = (out / gpus) * 2 * area,
                      .wireBase = (out / gpus) * 2 * area + area,
                      .landBase = sentPerGpu * 2 * area + (in / gpus) * area,
                      .wire = {}};
      routeNodePair(*program, shape, route);
    }
  }
  return program;
}

constexpr int kPairingXor = 1;            // `pairing` values: 0 shift, 1 xor
constexpr int kAllToAllForwardChunk = 1;  // `forward` values: 0 aggregated, 1 chunk

bool isPowerOfTwo(int n) {
  return n > 0 && (n & (n - 1)) == 0;
}

// forward=chunk route: the chunks of each source GPU (a,i) for GPUs [lo, lo+w) of node b cross
// as one message of w chunks to the receiver, which scatters each chunk as it lands. Scratch:
// `gatherBase` + i·w on the sender, `landBase` + i·w on the receiver; the sender gathers
// GPU i's chunks on threadblock `gatherTb` + i.
void routeNodePairByChunk(lang::Program& program, const NodeShape& shape, const PairRoute& route) {
  const int w = route.width;
  const int sendRank = shape.rank(route.from, route.sender);
  const int recvRank = shape.rank(route.to, route.receiver);
  const int firstChunk = shape.rank(route.to, route.lo);
  for (int i = 0; i < shape.gpus; ++i) {
    const int src = shape.rank(route.from, i);
    lang::ChunkRef row = program.chunk(src, lang::Buffer::input, firstChunk, w);
    if (src != sendRank) {
      // Its own threadblock, so the receive is not fused into the wire's send threadblock
      // (which already has the peer leader as its receive peer).
      row = row.copy(sendRank, lang::Buffer::scratch, route.gatherBase + i * w,
                     {.recvTb = route.gatherTb + i});
    }
    if (w == 1) {  // the receiver is the destination
      row.copy(recvRank, lang::Buffer::output, src, route.wire);
      continue;
    }
    const lang::ChunkRef landed =
        row.copy(recvRank, lang::Buffer::scratch, route.landBase + i * w, route.wire);
    for (int j = 0; j < w; ++j)
      landed.slice(j, 1).copy(shape.rank(route.to, route.lo + j), lang::Buffer::output, src);
  }
}

std::unique_ptr<lang::Program> buildHierarchicalAllToAll(const std::string& name,
                                                         const BuildArgs& args) {
  const NodeShape shape = shapeOf(args);
  const int gpus = shape.gpus;
  const int leaders = std::min(args.param("leaders"), gpus);
  const bool xorPairs = args.param("pairing") == kPairingXor && isPowerOfTwo(shape.nodes);
  const bool perChunk = args.param("forward") == kAllToAllForwardChunk;
  auto program = newHierarchicalAllToAll(name, args);
  exchangeInsideNodes(*program, shape);
  // Leader l owns destination GPUs [lo(l), lo(l+1)); scratch per leader: two sets of
  // [gather, wire, landing] of G·w chunks each, alternating by step.
  auto lo = [&](int l) { return l * gpus / leaders; };
  int widest = 0;
  for (int l = 0; l < leaders; ++l)
    widest = std::max(widest, lo(l + 1) - lo(l));
  const int area = gpus * widest;
  for (int step = 1; step < shape.nodes; ++step) {
    const int set = (step % 2) * 3 * area;
    for (int a = 0; a < shape.nodes; ++a) {
      for (int l = 0; l < leaders; ++l) {
        PairRoute route{.from = a,
                        .to = xorPairs ? a ^ step : (a + step) % shape.nodes,
                        .sender = lo(l),
                        .receiver = lo(l),
                        .lo = lo(l),
                        .width = lo(l + 1) - lo(l),
                        .gatherBase = set,
                        .wireBase = set + area,
                        .landBase = set + 2 * area,
                        .wire = {.sendTb = step - 1, .recvTb = step - 1},
                        .gatherTb = shape.nodes - 1};
        if (perChunk)
          routeNodePairByChunk(*program, shape, route);
        else
          routeNodePair(*program, shape, route);
      }
    }
  }
  return program;
}

std::unique_ptr<lang::Program> buildEager(const std::string& name, const BuildArgs& args) {
  const NodeShape shape = shapeOf(args);
  const int nodes = shape.nodes;
  const int gpus = shape.gpus;
  auto program = newHierarchicalAllToAll(name, args);
  for (int r = 0; r < args.ranks; ++r)
    program->chunk(r, lang::Buffer::input, r).copy(r, lang::Buffer::output, r);
  const int interSteps = (nodes - 1) * gpus;
  const int steps = std::max(interSteps, gpus - 1);
  int nextTb = 0;
  for (int step = 1; step <= steps; ++step) {
    if (step <= interSteps) {
      const int tb = nextTb++;
      const int nodeShift = 1 + (step - 1) / gpus;
      const int gpuShift = (step - 1) % gpus;
      for (int n = 0; n < nodes; ++n) {
        for (int g = 0; g < gpus; ++g) {
          const int dst = shape.rank((n + nodeShift) % nodes, (g + gpuShift) % gpus);
          program->chunk(shape.rank(n, g), lang::Buffer::input, dst)
              .copy(dst, lang::Buffer::output, shape.rank(n, g), {.sendTb = tb, .recvTb = tb});
        }
      }
    }
    if (step < gpus) {
      const int tb = nextTb++;
      for (int n = 0; n < nodes; ++n) {
        for (int g = 0; g < gpus; ++g) {
          const int dst = shape.rank(n, (g + step) % gpus);
          program->chunk(shape.rank(n, g), lang::Buffer::input, dst)
              .copy(dst, lang::Buffer::output, shape.rank(n, g), {.sendTb = tb, .recvTb = tb});
        }
      }
    }
  }
  return program;
}

}  // namespace

std::vector<AlgorithmInfo> hierarchicalAllToAllAlgorithms() {
  return {
      {.name = "alltoall.eager",
       .collective = "alltoall",
       .description = "pairwise with the intra-node steps overlapping the first inter-node ones",
       .citation = "MVAPICH all-to-all Algorithm 2 (Eager personalized all-to-all), Figure 4",
       .shape = Shape::nodes,
       .minRanks = 2,
       .params = {},
       .build = &buildEager,
       .steps = "max(G−1, (N−1)G)",
       .bytesSent = "(G−1)/(NG) · n intra + (N−1)/N · n inter, in p−1 messages",
       .cost = "(N−1)G · (α_e + n/(NG) · β_e), the G−1 intra-node exchanges hidden beside the "
               "first ones",
       .winsWhen = "few nodes, medium buffers: G−1 fewer steps than pairwise at the same bytes"},
      {.name = "alltoall.hierarchical",
       .collective = "alltoall",
       .description = "per node L leaders gather, exchange pairwise across nodes (one message "
                      "per leader pair and step) and scatter; intra-node direct",
       .citation = "MVAPICH all-to-all Algorithm 3 (Hierarchical personalized all-to-all), §III-C",
       .shape = Shape::nodes,
       .minRanks = 2,
       .params = {{.name = "leaders",
                   .defaultValue = 1,
                   .minValue = 1,
                   .maxValue = 8,
                   .description = "leader GPUs per node (capped at G); leader l handles the "
                                  "chunks for GPUs [l·G/L, (l+1)·G/L)"},
                  {.name = "pairing",
                   .defaultValue = kPairingXor,
                   .minValue = 0,
                   .maxValue = 1,
                   .description = "xor (Alg. 3): step s pairs node a with a XOR s, shift "
                                  "when N is not a power of two; shift: a sends to a+s",
                   .valueNames = {"shift", "xor"}},
                  forwardParam("chunk (Alg. 3): one inter-node message per source GPU and "
                               "step, scattered chunk by chunk; aggregated: gather, transpose, "
                               "one message per leader pair and step")},
       .build = &buildHierarchicalAllToAll,
       .steps = "N−1 exchange steps (+ gather and scatter, pipelined across steps)",
       .bytesSent = "non-leader: (N−1)/N · n to its leader; leader: (N−1)G/L · n/N inter + "
                    "about as much scattered",
       .cost = "(N−1)(α_e + G/L · n/N · β_e) + (N−1)(2α_i + G/L · n/N · β_i) on a leader",
       .winsWhen = "many small messages across nodes with one NIC per L GPUs: N−1 inter-node "
                   "messages per leader instead of (N−1)G per GPU"},
      {.name = "alltoall.three-step",
       .collective = "alltoall",
       .description = "gather + transpose per remote node, one G²-chunk transfer per node pair, "
                      "scatter; node pairs dealt round-robin to the GPUs",
       .citation = "GC3 §7.3 (two-step extended by a scatter step, as msccl-tools' "
                   "alltoall_a100_three_step)",
       .shape = Shape::nodes,
       .minRanks = 2,
       .params = {},
       .build = &buildThreeStep,
       .steps = "3",
       .bytesSent = "≤ (N−1)/N · n gathered + ⌈(N−1)/G⌉ · G/N · n inter + as much scattered",
       .cost = "2(α_i + (N−1)/N · nβ_i) + ⌈(N−1)/G⌉(α_e + G/N · nβ_e)",
       .winsWhen = "many nodes and small messages: one inter-node message per node pair "
                   "(N(N−1) in all, vs N(N−1)G two-step, N(N−1)G² direct)"},
      {.name = "alltoall.two-step",
       .collective = "alltoall",
       .description = "gather per remote node in scratch, one aggregated transfer per GPU pair",
       .citation = "GC3 §7.3 Figure 8",
       .shape = Shape::nodes,
       .minRanks = 2,
       .params = {instanceChannelsParam(
           "k instances, each on G of the G·k parts (G GPUs × k parts) a GPU pair exchanges, "
           "on channels 2c (NVLink) and 2c+1 (across nodes)")},
       .build = &buildTwoStep,
       .steps = "2",
       .bytesSent = "(G−1)/G · n intra + (N−1)/N · n inter",
       .cost = "(G−1)α_i + (G−1)/G · nβ_i + (N−1)α_e + (N−1)/N · nβ_e",
       .winsWhen = "many nodes, small messages: N−1 instead of (N−1)G inter-node messages per GPU"},
  };
}

}  // namespace chorus::algorithms
