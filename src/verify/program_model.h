// A flat, indexed view of a structurally sound ir::Algorithm shared by the simulation, deadlock
// and race checks (verify stage): global step ("node") and threadblock numbering, matched
// connections, and canonical buffer slots after in-place aliasing.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ir/algorithm.h"
#include "ir/collective.h"
#include "verify/findings.h"

namespace chorus::verify {

struct TbInfo {
  int rank = 0;
  int tb = 0;         // index inside the rank
  int firstNode = 0;  // node id of step 0
  int steps = 0;
  int outConn = -1;  // connection this tb sends on
  int inConn = -1;   // connection this tb receives on
};

// One (sender rank, receiver rank, channel) connection with exactly one tb per side.
struct Connection {
  int senderTb = -1;  // global tb ids
  int receiverTb = -1;
  int channel = 0;
  std::vector<int> sendNodes;  // the steps that send on it, in order
  std::vector<int> recvNodes;  // the steps that receive from it, in order (same length)
};

struct ProgramModel {
  const ir::Algorithm* algorithm = nullptr;
  std::shared_ptr<const ir::Collective> collective;
  std::vector<TbInfo> tbs;       // global tb id -> info
  std::vector<int> rankFirstTb;  // rank -> first global tb id; size nranks + 1
  std::vector<int> nodeTb;       // node -> global tb id
  std::vector<Connection> connections;
  // Canonical slots: every (rank, buffer, index) maps to one global slot id.
  std::vector<std::vector<int>> inputSlot;   // rank -> input index -> slot
  std::vector<std::vector<int>> outputSlot;  // rank -> output index -> slot
  std::vector<int> scratchBase;              // rank -> slot of scratch[0]
  std::vector<int> slotRank;                 // slot -> rank
  std::vector<ir::Location> slotLocation;    // slot -> canonical location
  std::vector<char> slotHasInitialValue;     // slot -> the collective's precondition sets it

  int nodeCount() const { return static_cast<int>(nodeTb.size()); }
  int nodeOf(int globalTb, int step) const { return tbs[globalTb].firstNode + step; }
  int stepOf(int node) const { return node - tbs[nodeTb[node]].firstNode; }
  const ir::Threadblock& threadblock(int globalTb) const {
    const TbInfo& info = tbs[globalTb];
    return algorithm->ranks[info.rank].threadblocks[info.tb];
  }
  const ir::Step& step(int node) const { return threadblock(nodeTb[node]).steps[stepOf(node)]; }
  int slotOf(int rank, ir::BufferKind buffer, int index) const;
  // "rank 2 tb 0 step 4".
  std::string nodeName(int node) const;
  // The slot's canonical name: "scratch[3]", "input[5]".
  std::string slotName(int slot) const;
};

// Matches connections and reports `malformed` findings for tbs sharing a connection, sends or
// receives without a counterpart, and k-th send/receive pairs whose counts differ. Returns
// nullptr when any was found. Precondition: checkStructure() returned true.
std::unique_ptr<ProgramModel> buildProgramModel(const ir::Algorithm& algorithm,
                                                std::shared_ptr<const ir::Collective> collective,
                                                FindingSink& sink);

}  // namespace chorus::verify
