// The compiler's internal Instruction DAG (GC3 §4.2): one node per send/recv/rrc/copy/reduce
// (and, after fusion, rcs/rrcs/rrs), with same-rank processing edges and cross-rank
// communication edges (send -> matching receive). Built by lowerDag(), scheduled into an
// ir::Algorithm by assignThreadblocks().
#pragma once

#include <array>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "compiler/pipeline.h"
#include "ir/algorithm.h"
#include "ir/collective.h"

namespace chorus::compiler {

struct Instr {
  int id = 0;  // == position in InstrGraph::instrs; trace order is a topological order
  int rank = 0;
  ir::OpKind op = ir::OpKind::nop;
  bool dead = false;  // folded into another instr by fusion
  // Local operands (canonical buffers). Receive-reduce ops read their local operand from src.
  // (The one-byte fields sit together: there are millions of instructions at 1024 ranks.)
  ir::BufferKind srcBuffer = ir::BufferKind::input;
  ir::BufferKind dstBuffer = ir::BufferKind::input;
  int srcIndex = 0;
  int dstIndex = 0;
  int count = 1;
  int sendPeer = -1;   // for ops that send
  int recvPeer = -1;   // for ops that receive
  int sendMatch = -1;  // ops that send: the receiving instr on sendPeer
  int recvMatch = -1;  // ops that receive: the sending instr on recvPeer
  int channelHint = -1;
  int sendTbHint = -1;  // manual threadblock on this rank for the sending part
  int recvTbHint = -1;  // manual threadblock on this rank for the receiving part
  int replica = 0;      // which parallel/instance replica made it (channels never shared)
  // Same-rank processing predecessors, sorted, unique: InstrGraph::preds(instr), a range of
  // InstrGraph::predPool (one array for all, not one vector each).
  int predBegin = 0;
  int predCount = 0;
  int where = -1;  // DSL source location: index into InstrGraph::locations
  // Scheduling results.
  int replicaChannel = -1;  // channel within the replica's range (set by assignChannels)
  int channel = -1;         // channel of the tb that runs it (set by assignChannels for comm ops)
  int slot = -1;  // threadblock slot chosen by assignChannels (index into InstrGraph::slots)
  int tb = -1;
  int step = -1;
};

// A threadblock in the making: a (send peer, recv peer, channel) tuple on one rank. Sides are
// -1 until an instruction needs them.
struct TbSlot {
  int rank = 0;
  int channel = 0;
  int sendPeer = -1;
  int recvPeer = -1;
  int manualId = -1;  // user's threadblock id under manual placement
};

struct InstrGraph {
  std::string name;
  std::shared_ptr<const ir::Collective> collective;
  ir::Protocol protocol = ir::Protocol::simple;
  std::vector<int> scratchChunks;  // per rank
  std::vector<Instr> instrs;
  std::vector<TbSlot> slots;
  int replicaCount = 1;
  // Distinct DSL source locations, shared by the instructions that name them (Instr::where).
  std::vector<std::string> locations;
  // Per flow start (a plain send's id): channels within its replica not to use. Few flows have
  // any, so they live here rather than in every Instr.
  std::unordered_map<int, std::vector<int>> avoidChannels;

  // Processing predecessors of every instruction, each instr's in one contiguous range.
  std::vector<int> predPool;

  const std::string& whereOf(const Instr& in) const { return locations[in.where]; }
  std::span<int> preds(const Instr& in) {
    return {predPool.data() + in.predBegin, static_cast<std::size_t>(in.predCount)};
  }
  std::span<const int> preds(const Instr& in) const {
    return {predPool.data() + in.predBegin, static_cast<std::size_t>(in.predCount)};
  }
};

// Thrown by assignThreadblocks when two messages on one connection must be received in the
// opposite order to the one they can be sent in; the pipeline moves the flow starting at
// `flowStart` off `replicaChannel` and assigns channels again.
struct ChannelConflict {
  int flowStart = -1;
  int replicaChannel = -1;
};

struct PassContext {
  const CompileOptions& options;
};

// Location helpers shared by the passes: every (rank, canonical buffer, index) gets a dense id.
class LocationIndex {
 public:
  explicit LocationIndex(const InstrGraph& graph);
  int id(int rank, ir::BufferKind buffer, int index) const;
  int size() const { return total_; }

 private:
  std::vector<std::array<int, 3>> base_;  // per rank, per buffer: first id
  int total_ = 0;
};

// One access of an instruction to a location, in trace order.
struct Access {
  int instr = 0;
  bool write = false;
};

// Per location id, the accesses of all live instructions in trace order, in one flat array.
class AccessLists {
 public:
  AccessLists(const InstrGraph& graph, const LocationIndex& index);
  std::span<const Access> of(int location) const {
    return {items_.data() + begin_[location], items_.data() + begin_[location + 1]};
  }

 private:
  std::vector<int> begin_;  // per location id, plus one: first entry in items_
  std::vector<Access> items_;
};

// Longest path from a source (depth) and to a sink (reverse depth) over processing and
// communication edges, per instr id (dead instrs get 0).
struct Depths {
  std::vector<int> depth;
  std::vector<int> reverseDepth;
};
Depths computeDepths(const InstrGraph& graph);

// Text dump of the instruction graph for CHORUS_DEBUG_PASSES.
std::string printInstrGraph(const InstrGraph& graph);

}  // namespace chorus::compiler
