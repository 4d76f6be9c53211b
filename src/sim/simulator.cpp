// The event-driven simulator. See simulator.h for the model; docs/simulator.md for its
// assumptions and measured accuracy.
//
// Algorithm (one call):
//   1. Derive the runtime's tiling from the call's size (interpreter.cpp prepareTasks): chunk
//      bytes, tile bytes, tiles. Every threadblock runs its steps in order, once per tile.
//   2. A step starts when its threadblock reached it, its cross-threadblock dependencies of the
//      same tile finished, a received message has arrived, and a send has a free FIFO slot.
//   3. Its work is a sequence of passes over the tile's bytes (the interpreter's memcpy and
//      reduce passes, execute()): a pass that writes the outgoing message crosses the route to
//      the peer; the others are local. A pass is a flow. On a store-and-forward device
//      (DeviceModel::slices == 1, a CPU host) its rate is
//        1 / (1 / min(engine rate × time shares, memory caps) + 1 / min(route link shares))
//      so an engine's reduction and the wire add up (the α-β-γ model of the xCCL notes) while
//      memory buses cap the engine. On a slicing device (a GPU: slices > 1, NCCL prims) an op is
//      one fused pass whose rate is min(engine, wire), times the protocol's efficiency (LL, LL128).
//      Shares are equal per resource and are recomputed whenever a flow starts or ends on it
//      (congestion); time shares nest (a node's cores among its busy rank engines, then each
//      engine among its flows).
//   4. When the step ends, its message arrives after the route's latency plus the device's
//      message latency, its received slot is freed, and the steps waiting on it are woken.
//      On a slicing device the message's first slice arrives that latency after the first
//      slice left, and a receiving step may start then (cut-through); it ends no earlier than
//      its message's last slice arrived plus one slice of its own work.
//   5. Steady state (SimOptions::extrapolate, calls of many tiles). The call cut to its first M
//      tiles (the last one the size of the call's last tile) runs exactly as the whole call
//      until a threadblock is about to start tile M - 1, so the simulation pauses there, a copy
//      finishes the cut call and gives its finish time F(M), and the original goes on. At
//      checkpoints M = M0, M0 + K, M0 + 2K, ... (M0 ≡ tiles mod K, M ≤ tiles / 2): once F and
//      every resource's bytes grow by the same amounts over 3 periods in a row, the remaining
//      tiles repeat the period: F(tiles) = F(M) + (tiles − M) / K · (F(M) − F(M − K)), and
//      busy times grow by their mean over those periods. Exact once the bottleneck's timing
//      repeats every K tiles (a network of FIFOs with deterministic service reaches such a
//      periodic regime: Baccelli et al., "Synchronization and Linearity", 1992, ch. 7); the
//      repeats are the check, and tests/sim/steady_state_test.cpp holds it to 1e-6 against
//      simulating every tile. Otherwise every tile is simulated.
#include "sim/simulator.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <limits>
#include <map>
#include <tuple>
#include <unordered_map>

#include "ir/step_endpoints.h"
#include "ir/tiling.h"
#include "perf/collective.h"
#include "sim/flow_network.h"
#include "sim/one_sided_sim.h"
#include "sim/sim_shared.h"
#include "support/error.h"

namespace chorus::sim {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();
constexpr int kNone = -1;

// Steady state (file comment step 5): checkpoints every kPeriodTiles tiles, the first at least
// kPeriodTiles in; kSteadyRepeats equal periods in a row (relative to the period, within
// kSteadyTolerance) allow extrapolation; checkpoints stop past half the call.
constexpr int kPeriodTiles = 4;
constexpr int kSteadyRepeats = 3;
constexpr double kSteadyTolerance = 1e-9;

enum class EventKind : std::uint8_t {
  flowDone,
  arrival,
  headArrival,
  overheadDone,
  tailDone,
  portDone
};

using Event = TimedEvent<EventKind>;

// Why a step could not start earlier (critical path).
enum class Wait : std::uint8_t { none, previous, dependency, data, slot, port };

struct Connection {
  int sender = kNone;    // flat threadblock index
  int receiver = kNone;  // flat threadblock index
  int srcRank = 0;
  int dstRank = 0;
  std::uint64_t sent = 0;          // messages whose send started
  std::uint64_t arrived = 0;       // messages at the receiver
  std::uint64_t heads = 0;         // messages whose first slice is at the receiver (slices > 1)
  std::deque<double> tails;        // arrival times of messages [consumed, arrived) (slices > 1)
  std::deque<double> headTimes;    // first-slice arrivals of messages not taken (critical path)
  std::uint64_t taken = 0;         // messages a receive step started on
  std::uint64_t consumed = 0;      // slots freed
  std::deque<int> sendRecords;     // record of each message in flight (critical path)
  std::deque<int> consumeRecords;  // record that freed each slot (critical path)
  std::deque<double> consumeTimes;
};

// tail: a slicing device's receiving step did its work and waits for its message's last slice.
enum class Phase : std::uint8_t { idle, overhead, working, tail, done };

struct ThreadblockState {
  int rank = 0;
  int tb = 0;
  const ir::Threadblock* program = nullptr;
  int sendConn = kNone;
  int recvConn = kNone;
  int engine = kNone;  // SimResource index, kNone when unlimited
  int cpu = kNone;
  int stepBase = 0;  // flat index of its step 0
  int step = 0;
  int tile = 0;
  Phase phase = Phase::idle;
  int pass = 0;            // current pass of the running step
  int record = kNone;      // the running step's record
  int lastRecord = kNone;  // the previous step's record
  double lastEnd = 0;
  std::vector<int> localResources;  // resources of a local pass: engine, cpu, memory
  std::vector<int> wireResources;   // of a pass writing the message: engine, cpu, route
  double messageDelay = 0;          // send end to arrival: route, device and expected wake latency
  double copyRate = kInfinity;      // the device's rates at this node's working set
  double reduceRate = kInfinity;
  bool waitsForPort = false;  // queued in its rank's PortQueue
  bool tailChecked = false;   // the running step's last slice has been waited for
};

// A rank's send ports (DeviceModel::sendPorts): free ports and the threadblocks waiting for
// one, in request order.
struct PortQueue {
  int free = 0;
  std::deque<int> waiting;
  int lastReleaser = kNone;  // record of the step that freed a port last (critical path)
  double lastRelease = 0;
};

// What the event loop reads of a step, packed by flat step index (the IR's Step is larger and
// spread over the program): its op, its count and its dependencies, deps_[depBegin, depEnd).
struct StepInfo {
  ir::OpKind op = ir::OpKind::nop;
  int count = 1;
  int depBegin = 0;
  int depEnd = 0;
};

// A dependency: step `step` of flat threadblock `tb`.
struct FlatDep {
  int tb = 0;
  int step = 0;
};

struct Pass {
  bool reduce = false;  // rate: reduceRate; else copyRate
  bool wire = false;    // writes the outgoing message: crosses the route
};

// The interpreter's passes over a tile per op (runtime/interpreter.cpp execute()), read off
// the op's row: one pass computes the value (a reduce pass for a reduction, else a copy) into
// its first destination, and an op that both stores and sends copies it once more. A reduction
// is computed into the outgoing message, which stays in cache, and copied home; a copied value
// lands home first and is then written to the message.
int unfusedPassesOf(ir::OpKind op, Pass out[2]) {
  const ir::OpSemantics& row = ir::opSemantics(op);
  if (row.value == ir::StepValue::none || (!row.storesDst && !row.sends)) return 0;
  const bool reduces = ir::valueReduces(row.value);
  if (!row.storesDst || !row.sends) {
    out[0] = {reduces, row.sends};
    return 1;
  }
  if (reduces) {
    out[0] = {true, true};
    out[1] = {false, false};
  } else {
    out[0] = {false, false};
    out[1] = {false, true};
  }
  return 2;
}

// `fused`: one pass doing all of them, as a GPU primitive reads its input once and writes
// every destination in the same loop (NCCL prims recvCopySend, recvReduceCopySend).
int passesOf(ir::OpKind op, Pass out[2], bool fused) {
  const int n = unfusedPassesOf(op, out);
  if (!fused || n < 2) return n;
  out[0] = {out[0].reduce || out[1].reduce, out[0].wire || out[1].wire};
  return 1;
}

class Simulation {
 public:
  Simulation(const ir::Algorithm& algorithm, topology::Fabric& fabric, const SimOptions& options)
      : a_(algorithm),
        fabric_(fabric),
        options_(options),
        device_(fabric.topology().node.device),
        slicing_(device_.slices > 1),
        protocol_(slicing_ ? protocolCost(algorithm.protocol) : ProtocolCost{}),
        net_(slicing_) {}

  SimResult run() {
    const auto wallStart = std::chrono::steady_clock::now();
    deriveTiling();
    buildResources();
    buildThreadblocks();
    if (chunkBytes_ > 0) {
      for (int t = 0; t < static_cast<int>(tbs_.size()); ++t)
        wake(t);
      if (options_.extrapolate && !recording())
        runToSteadyState();
      else
        advance();
      if (!extrapolated_) checkFinished();
    }
    SimResult result = collect();
    result.simSeconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - wallStart).count();
    return result;
  }

 private:
  // ---- steady state (file comment step 5) -----------------------------------------------
  // What a cut call's finish shows: its finish time and each resource's busy time and bytes.
  struct Checkpoint {
    double finish = 0;
    std::vector<double> busy;
    std::vector<double> bytes;
  };

  // Runs until the finish, or until a threadblock is about to start tile pauseTile_; returns
  // whether it paused. Resumable.
  bool advance() {
    paused_ = false;
    drainWorklist();
    if (!paused_) loop();
    return paused_;
  }

  // The call cut to its first `tiles` tiles, finished from the paused state by a copy.
  Checkpoint finishCutCall(int tiles) {
    Simulation cut = *this;
    cut.tiles_ = tiles;
    cut.pauseTile_ = kNone;
    cut.advance();
    cut.checkFinished();
    cutSteps_ += cut.stepsExecuted_ - stepsExecuted_;
    cutEvents_ += cut.eventCount_ - eventCount_;
    Checkpoint point;
    point.finish = cut.finishTime_;
    for (const SimResource& r : cut.net_.resources()) {
      point.busy.push_back(r.busy);
      point.bytes.push_back(r.bytes);
    }
    return point;
  }

  // Whether the last kSteadyRepeats + 1 checkpoints are evenly spaced in the finish time and
  // in every resource's bytes. (Busy times are not checked: a link off the critical path may
  // idle a little more in one period than in the next while the finish keeps its period.)
  static bool periodic(const std::vector<Checkpoint>& points) {
    const std::size_t n = points.size();
    if (n < kSteadyRepeats + 1) return false;
    const Checkpoint& last = points[n - 1];
    const Checkpoint& before = points[n - 2];
    const double period = last.finish - before.finish;
    if (!(period > 0)) return false;
    auto same = [](double a, double b, double scale) {
      return std::abs(a - b) <= kSteadyTolerance * scale;
    };
    for (std::size_t i = n - kSteadyRepeats; i < n - 1; ++i) {
      const Checkpoint& x = points[i];
      const Checkpoint& y = points[i - 1];
      if (!same(x.finish - y.finish, period, period)) return false;
      for (std::size_t r = 0; r < last.bytes.size(); ++r) {
        const double bytes = last.bytes[r] - before.bytes[r];
        if (!same(x.bytes[r] - y.bytes[r], bytes, std::max(bytes, 1.0))) return false;
      }
    }
    return true;
  }

  // Simulates tile by tile with checkpoints; extrapolates once they repeat, else finishes.
  void runToSteadyState() {
    const int total = tiles_;
    std::vector<Checkpoint> points;
    const int first = kPeriodTiles + total % kPeriodTiles;
    if (first + kSteadyRepeats * kPeriodTiles > total / 2) {
      advance();  // too few tiles to see the period repeat
      return;
    }
    for (int cut = first; cut <= total / 2; cut += kPeriodTiles) {
      pauseTile_ = cut - 1;
      if (!advance()) return;  // finished or deadlocked (checkFinished says which)
      points.push_back(finishCutCall(cut));
      if (!periodic(points)) continue;
      // The remaining (total - cut) / K periods repeat the last one; busy times grow by their
      // mean over the periods checked.
      const double periods = static_cast<double>(total - cut) / kPeriodTiles;
      const Checkpoint& last = points.back();
      const Checkpoint& before = points[points.size() - 2];
      const Checkpoint& first = points[points.size() - 1 - kSteadyRepeats];
      finishTime_ = last.finish + periods * (last.finish - before.finish);
      std::vector<SimResource>& resources = net_.resources();
      for (std::size_t r = 0; r < resources.size(); ++r) {
        resources[r].busy =
            last.busy[r] + periods * (last.busy[r] - first.busy[r]) / kSteadyRepeats;
        resources[r].bytes = last.bytes[r] + periods * (last.bytes[r] - before.bytes[r]);
      }
      tilesSimulated_ = cut;
      extrapolated_ = true;
      return;
    }
    pauseTile_ = kNone;
    advance();
  }

  // ---- set-up --------------------------------------------------------------------------
  void deriveTiling() {
    const std::size_t elem = options_.elementSize;
    chunkElems_ = callChunkElems(a_, options_);
    chunkBytes_ = chunkElems_ * elem;
    // The interpreter's tiling (ir/tiling.h); untiled, one tile covers the whole chunk.
    const ir::Tiling tiling =
        options_.tiling
            ? ir::tileChunks(chunkElems_, elem, ir::messageBytes(a_.protocol, options_.slotBytes),
                             ir::largestMessageChunks(a_))
            : ir::Tiling{chunkElems_, 1, chunkElems_};
    tileElems_ = tiling.tileElems;
    tiles_ = static_cast<int>(tiling.tiles);
    lastTileElems_ = tiling.lastTileElems;
    tilesSimulated_ = tiles_;
    callTiles_ = tiles_;
  }

  // The last tile simulated has the size of the call's last tile (a cut call's too).
  std::uint64_t tileBytes(int tile) const {
    return (tile == tiles_ - 1 ? lastTileElems_ : tileElems_) * options_.elementSize;
  }

  void buildResources() {
    requireSimulable(a_, fabric_, options_);
    if (options_.slots < 1) throw OptionError("simulate: a FIFO needs at least 1 slot");
    if (options_.slotBytes < options_.elementSize)
      throw OptionError("simulate: the FIFO slot is smaller than one element");
    HostEngines engines = addHostEngines(net_, fabric_.topology(), a_.nranks);
    nodeCpu_ = std::move(engines.nodeCpu);
    rankEngine_ = std::move(engines.rankEngine);
    if (device_.sendPorts > 0)
      ports_.assign(static_cast<std::size_t>(a_.nranks),
                    PortQueue{device_.sendPorts, {}, kNone, 0});
  }

  void buildThreadblocks() {
    std::map<std::tuple<int, int, int>, int> connections;  // (src, dst, channel) -> index
    auto connectionFor = [&](int src, int dst, int channel) {
      auto [it, inserted] =
          connections.try_emplace({src, dst, channel}, static_cast<int>(conns_.size()));
      if (inserted) {
        Connection c;
        c.srcRank = src;
        c.dstRank = dst;
        conns_.push_back(std::move(c));
      }
      return it->second;
    };
    int steps = 0;
    for (const auto& rp : a_.ranks) {
      for (const auto& tb : rp.threadblocks) {
        ThreadblockState s;
        s.rank = rp.rank;
        s.tb = tb.id;
        s.program = &tb;
        s.stepBase = steps;
        steps += static_cast<int>(tb.steps.size());
        s.phase = tb.steps.empty() ? Phase::done : Phase::idle;
        if (!rankEngine_.empty()) s.engine = rankEngine_[static_cast<std::size_t>(rp.rank)];
        if (!nodeCpu_.empty())
          s.cpu = nodeCpu_[static_cast<std::size_t>(fabric_.topology().nodeOf(rp.rank))];
        const int flat = static_cast<int>(tbs_.size());
        if (tb.sendPeer >= 0) {
          s.sendConn = connectionFor(rp.rank, tb.sendPeer, tb.channel);
          conns_[static_cast<std::size_t>(s.sendConn)].sender = flat;
        }
        if (tb.recvPeer >= 0) {
          s.recvConn = connectionFor(tb.recvPeer, rp.rank, tb.channel);
          conns_[static_cast<std::size_t>(s.recvConn)].receiver = flat;
        }
        tbs_.push_back(std::move(s));
      }
    }
    // Flat threadblock index of (rank, tb) and, per step with dependents, who waits on it.
    tbIndex_.assign(static_cast<std::size_t>(a_.nranks) + 1, 0);
    for (std::size_t t = 0; t < tbs_.size(); ++t)
      tbIndex_[static_cast<std::size_t>(tbs_[t].rank) + 1] = static_cast<int>(t) + 1;
    for (std::size_t r = 1; r < tbIndex_.size(); ++r)
      tbIndex_[r] = std::max(tbIndex_[r], tbIndex_[r - 1]);
    // Dependents as compressed rows: dependentStart_[step]..dependentStart_[step + 1].
    std::vector<std::pair<int, int>> edges;  // (flat step waited on, flat tb waiting)
    steps_.clear();
    deps_.clear();
    for (int t = 0; t < static_cast<int>(tbs_.size()); ++t) {
      const ThreadblockState& s = tbs_[static_cast<std::size_t>(t)];
      for (const auto& step : s.program->steps) {
        StepInfo info{step.op, step.count, static_cast<int>(deps_.size()), 0};
        for (const auto& dep : step.deps) {
          edges.emplace_back(flatStep(s.rank, dep.tb, dep.step), t);
          deps_.push_back(FlatDep{flatTb(s.rank, dep.tb), dep.step});
        }
        info.depEnd = static_cast<int>(deps_.size());
        steps_.push_back(info);
      }
    }
    std::sort(edges.begin(), edges.end());
    edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
    dependentStart_.assign(static_cast<std::size_t>(steps) + 1, 0);
    for (const auto& e : edges)
      ++dependentStart_[static_cast<std::size_t>(e.first) + 1];
    for (std::size_t i = 1; i < dependentStart_.size(); ++i)
      dependentStart_[i] += dependentStart_[i - 1];
    dependents_.clear();
    for (const auto& e : edges)
      dependents_.push_back(e.second);
    nodeWorkingSets_ = nodeWorkingSets(a_, fabric_.topology(), chunkBytes_);
    for (auto& s : tbs_) {
      // Rates at the node's working set: caches are shared by the ranks of a node.
      const double workingSet =
          nodeWorkingSets_[static_cast<std::size_t>(fabric_.topology().nodeOf(s.rank))];
      s.copyRate =
          rateOrInfinity(topology::rateAt(device_.copyCurve, workingSet, device_.copyRate));
      s.reduceRate =
          rateOrInfinity(topology::rateAt(device_.reduceCurve, workingSet, device_.reduceRate));
      for (auto* list : {&s.localResources, &s.wireResources}) {
        if (s.engine != kNone) list->push_back(s.engine);
        if (s.cpu != kNone) list->push_back(s.cpu);
      }
      for (int r : fabric_.localResources(s.rank))
        s.localResources.push_back(net_.fabricResource(fabric_, r));
      if (s.program->sendPeer >= 0 && s.program->sendPeer != s.rank) {
        const topology::Route& route = fabric_.route(s.rank, s.program->sendPeer);
        for (int r : route.resources)
          s.wireResources.push_back(net_.fabricResource(fabric_, r));
        s.messageDelay = route.latency + device_.messageLatency * protocol_.latency +
                         expectedWake(fabric_.topology(), s.program->sendPeer, a_.nranks);
      }
    }
    if (options_.criticalPath || options_.trace)
      stepRecord_.assign(static_cast<std::size_t>(steps) * static_cast<std::size_t>(tiles_), kNone);
    for (const auto& c : conns_) {
      if (c.sender == kNone || c.receiver == kNone)
        throw SimulationError(fmt::format(
            "{}: rank {} {} rank {} on a channel but no threadblock of rank {} {} it; the "
            "program cannot run (check it with `chorus verify`)",
            a_.name, c.srcRank, c.sender == kNone ? "receives from" : "sends to", c.dstRank,
            c.sender == kNone ? c.srcRank : c.dstRank,
            c.sender == kNone ? "sends to" : "receives from"));
    }
  }

  int flatTb(int rank, int tb) const { return tbIndex_[static_cast<std::size_t>(rank)] + tb; }
  int flatStep(int rank, int tb, int step) const {
    return tbs_[static_cast<std::size_t>(flatTb(rank, tb))].stepBase + step;
  }

  // ---- events -----------------------------------------------------------------------------
  void schedule(double time, EventKind kind, int id, std::uint32_t version = 0) {
    events_.push(Event{time, kind, id, version});
  }

  void loop() {
    while (!events_.empty() && !paused_) {
      const Event e = events_.pop();
      ++eventCount_;
      now_ = e.time;
      switch (e.kind) {
        case EventKind::flowDone: {
          if (!net_.current(FlowEnd{e.time, e.id, e.version})) break;
          finishFlow(e.id);
          break;
        }
        case EventKind::arrival:
          arrive(e.id);
          break;
        case EventKind::headArrival: {
          Connection& c = conns_[static_cast<std::size_t>(e.id)];
          ++c.heads;
          // A head later than its whole message (the pass sped up) was never waited for.
          if (recording() && c.heads > c.taken) c.headTimes.push_back(now_);
          wake(c.receiver);
          break;
        }
        case EventKind::overheadDone:
          startPass(e.id);
          break;
        case EventKind::tailDone:
          tbs_[static_cast<std::size_t>(e.id)].tailChecked = true;
          startPass(e.id);
          break;
        case EventKind::portDone:
          releasePort(e.id);
          break;
      }
      drainWorklist();
    }
  }

  void wake(int tb) { worklist_.push_back(tb); }

  void drainWorklist() {
    while (!worklist_.empty() && !paused_) {
      const int t = worklist_.back();
      worklist_.pop_back();
      tryStart(t);
    }
  }

  // ---- steps ------------------------------------------------------------------------------
  // Whether step `step` of flat threadblock `tb` finished its tile `tile`.
  bool finished(int tb, int step, int tile) const {
    const ThreadblockState& s = tbs_[static_cast<std::size_t>(tb)];
    if (s.phase == Phase::done) return true;
    return s.tile > tile || (s.tile == tile && s.step > step);
  }

  void tryStart(int t) {
    ThreadblockState& s = tbs_[static_cast<std::size_t>(t)];
    if (s.phase != Phase::idle) return;
    if (s.tile == pauseTile_ && s.step == 0) {
      // The first threadblock to reach tile pauseTile_: pause before it (runToSteadyState),
      // and try it again on resuming.
      pauseTile_ = kNone;
      paused_ = true;
      worklist_.push_back(t);
      return;
    }
    const StepInfo& step = steps_[static_cast<std::size_t>(s.stepBase + s.step)];
    // What was last to become ready (critical path): the previous step by default.
    double readyAt = s.lastEnd;
    Wait waited = Wait::previous;
    int waitedRecord = s.lastRecord;
    std::string waitedOn;
    for (int d = step.depBegin; d < step.depEnd; ++d) {
      const FlatDep& dep = deps_[static_cast<std::size_t>(d)];
      if (!finished(dep.tb, dep.step, s.tile)) return;
      if (recording()) {
        const int rec =
            recordOf(tbs_[static_cast<std::size_t>(dep.tb)].stepBase + dep.step, s.tile);
        if (rec != kNone && records_[static_cast<std::size_t>(rec)].end >= readyAt) {
          readyAt = records_[static_cast<std::size_t>(rec)].end;
          waited = Wait::dependency;
          waitedRecord = rec;
          const ir::StepRef& ref = s.program->steps[static_cast<std::size_t>(s.step)]
                                       .deps[static_cast<std::size_t>(d - step.depBegin)];
          waitedOn = fmt::format("tb {} step {}", ref.tb, ref.step);
        }
      }
    }
    if (ir::opReceives(step.op)) {
      Connection& c = conns_[static_cast<std::size_t>(s.recvConn)];
      if ((slicing_ ? std::max(c.heads, c.arrived) : c.arrived) <= c.taken) return;
      if (recording() && slicing_ && !c.headTimes.empty()) {
        // Started on the first slice: of the finished send, or of the one still running.
        const int rec = c.sendRecords.empty() ? tbs_[static_cast<std::size_t>(c.sender)].record
                                              : c.sendRecords.front();
        const double headAt = c.headTimes.front();
        c.headTimes.pop_front();
        if (headAt >= readyAt) {
          readyAt = headAt;
          waited = Wait::data;
          waitedRecord = rec;
          waitedOn = fmt::format("first slice from rank {}", c.srcRank);
        }
      } else if (recording() && !c.sendRecords.empty()) {
        const int rec = c.sendRecords.front();
        const double arrivedAt = arrivalTimes_[static_cast<std::size_t>(rec)];
        if (arrivedAt >= readyAt) {
          readyAt = arrivedAt;
          waited = Wait::data;
          waitedRecord = rec;
          waitedOn = fmt::format("data from rank {}", c.srcRank);
        }
      }
    }
    if (ir::opSends(step.op) && options_.tiling) {
      Connection& c = conns_[static_cast<std::size_t>(s.sendConn)];
      if (c.sent - c.consumed >= static_cast<std::uint64_t>(options_.slots)) return;
      if (recording() && c.sent >= static_cast<std::uint64_t>(options_.slots)) {
        // The slot this message uses was freed by the receive of message sent - slots; the
        // deques hold the receives [consumed - size, consumed).
        const std::uint64_t freer = c.sent - static_cast<std::uint64_t>(options_.slots);
        const std::uint64_t first = c.consumed - c.consumeRecords.size();
        if (freer >= first && freer < c.consumed) {
          const auto at = static_cast<std::size_t>(freer - first);
          const int rec = c.consumeRecords[at];
          const double freedAt = c.consumeTimes[at];
          if (freedAt >= readyAt) {
            readyAt = freedAt;
            waited = Wait::slot;
            waitedRecord = rec;
            waitedOn = fmt::format("a free slot to rank {}", c.dstRank);
          }
        }
      }
    }
    if (ir::opSends(step.op) && !ports_.empty()) {
      PortQueue& q = ports_[static_cast<std::size_t>(s.rank)];
      if (q.free == 0 || (!q.waiting.empty() && q.waiting.front() != t)) {
        if (!s.waitsForPort) {
          s.waitsForPort = true;
          q.waiting.push_back(t);
        }
        return;
      }
      if (s.waitsForPort) {
        q.waiting.pop_front();
        s.waitsForPort = false;
      }
      --q.free;
      if (recording() && q.lastReleaser != kNone && q.lastRelease >= readyAt && q.free == 0) {
        readyAt = q.lastRelease;
        waited = Wait::port;
        waitedRecord = q.lastReleaser;
        waitedOn = "a free send port";
      }
    }
    // All inputs are there: start.
    if (ir::opReceives(step.op)) ++conns_[static_cast<std::size_t>(s.recvConn)].taken;
    if (ir::opSends(step.op)) ++conns_[static_cast<std::size_t>(s.sendConn)].sent;
    ++stepsExecuted_;
    s.pass = 0;
    s.tailChecked = false;
    s.record = kNone;
    if (recording()) {
      StepRecord rec;
      rec.rank = s.rank;
      rec.tb = s.tb;
      rec.step = s.step;
      rec.tile = s.tile;
      rec.op = step.op;
      rec.peer = ir::opReceives(step.op) ? s.program->recvPeer
                                         : (ir::opSends(step.op) ? s.program->sendPeer : -1);
      rec.bytes = tileBytes(s.tile) * static_cast<std::uint64_t>(step.count);
      rec.ready = now_;
      rec.start = now_;
      s.record = static_cast<int>(records_.size());
      records_.push_back(std::move(rec));
      preds_.push_back(waitedRecord);
      waits_.push_back(waited);
      waitedOn_.push_back(std::move(waitedOn));
      arrivalTimes_.push_back(0);
      stepRecord_[static_cast<std::size_t>(s.stepBase + s.step) * tiles_ +
                  static_cast<std::size_t>(s.tile)] = s.record;
    }
    if (!ir::opMovesNoData(step.op) && device_.stepOverhead > 0) {
      s.phase = Phase::overhead;
      schedule(now_ + device_.stepOverhead, EventKind::overheadDone, t);
      return;
    }
    s.phase = Phase::working;
    startPass(t);
  }

  // Starts the threadblock's current pass, or ends the step when none is left.
  void startPass(int t) {
    ThreadblockState& s = tbs_[static_cast<std::size_t>(t)];
    s.phase = Phase::working;
    const StepInfo& step = steps_[static_cast<std::size_t>(s.stepBase + s.step)];
    Pass passes[2];
    const int n = passesOf(step.op, passes, slicing_);
    const bool moves = ir::opSends(step.op) || ir::opReceives(step.op);
    const double efficiency = moves ? protocol_.efficiency : 1.0;
    while (s.pass < n) {
      const Pass& p = passes[s.pass];
      const double base = p.reduce ? s.reduceRate : s.copyRate;
      const double bytes = static_cast<double>(tileBytes(s.tile)) * static_cast<double>(step.count);
      const std::vector<int>& res = p.wire ? s.wireResources : s.localResources;
      if (bytes > 0 && net_.bounded(base, res)) {
        const int id = startFlow(t, bytes, base, efficiency, res);
        if (slicing_ && p.wire) {
          // Cut-through: the first slice leaves after a slice's work at the starting rate.
          const Flow& f = net_.flow(id);
          schedule(now_ + bytes / device_.slices / f.rate + s.messageDelay, EventKind::headArrival,
                   s.sendConn);
        }
        return;
      }
      if (slicing_ && p.wire) schedule(now_ + s.messageDelay, EventKind::headArrival, s.sendConn);
      ++s.pass;  // instantaneous
    }
    if (slicing_ && ir::opReceives(step.op) && !s.tailChecked) {
      // The last slice of the received message must have arrived, and be worked on.
      Connection& c = conns_[static_cast<std::size_t>(s.recvConn)];
      if (c.arrived <= c.consumed) {
        s.phase = Phase::tail;  // arrive() resumes it
        return;
      }
      const double rate = (passes[0].reduce ? s.reduceRate : s.copyRate) * efficiency;
      const double sliceBytes =
          static_cast<double>(tileBytes(s.tile)) * step.count / device_.slices;
      const double end = c.tails.front() + (n > 0 ? sliceBytes / rate : 0.0);
      if (end > now_) {
        schedule(end, EventKind::tailDone, t);
        return;
      }
      s.tailChecked = true;
    }
    if (ir::opSends(step.op) && !ports_.empty()) {
      // One-port model: the port stays taken until the message arrived.
      schedule(now_ + s.messageDelay, EventKind::portDone, t);
      return;
    }
    endStep(t);
  }

  void releasePort(int t) {
    ThreadblockState& s = tbs_[static_cast<std::size_t>(t)];
    PortQueue& q = ports_[static_cast<std::size_t>(s.rank)];
    ++q.free;
    q.lastReleaser = s.record;
    q.lastRelease = now_;
    if (!q.waiting.empty()) wake(q.waiting.front());
    endStep(t, /*latencyPaid=*/true);
  }

  void endStep(int t, bool latencyPaid = false) {
    ThreadblockState& s = tbs_[static_cast<std::size_t>(t)];
    const StepInfo& step = steps_[static_cast<std::size_t>(s.stepBase + s.step)];
    if (s.record != kNone) records_[static_cast<std::size_t>(s.record)].end = now_;
    if (ir::opReceives(step.op)) {
      Connection& c = conns_[static_cast<std::size_t>(s.recvConn)];
      ++c.consumed;
      if (slicing_) c.tails.pop_front();
      if (recording()) {
        if (!c.sendRecords.empty()) c.sendRecords.pop_front();
        c.consumeRecords.push_back(s.record);
        c.consumeTimes.push_back(now_);
        if (c.consumeRecords.size() > static_cast<std::size_t>(options_.slots) + 1) {
          c.consumeRecords.pop_front();
          c.consumeTimes.pop_front();
        }
      }
      wake(c.sender);
    }
    if (ir::opSends(step.op)) {
      const double arrival = latencyPaid ? now_ : now_ + s.messageDelay;
      if (recording()) {
        arrivalTimes_[static_cast<std::size_t>(s.record)] = arrival;
        conns_[static_cast<std::size_t>(s.sendConn)].sendRecords.push_back(s.record);
      }
      schedule(arrival, EventKind::arrival, s.sendConn);
    }
    finishTime_ = std::max(finishTime_, now_);
    s.lastEnd = now_;
    s.lastRecord = s.record;
    const int done = s.stepBase + s.step;
    if (++s.step == static_cast<int>(s.program->steps.size())) {
      s.step = 0;
      if (++s.tile == tiles_) {
        s.phase = Phase::done;
        ++tbsDone_;
      }
    }
    if (s.phase != Phase::done) s.phase = Phase::idle;
    for (int i = dependentStart_[static_cast<std::size_t>(done)];
         i < dependentStart_[static_cast<std::size_t>(done) + 1]; ++i)
      wake(dependents_[static_cast<std::size_t>(i)]);
    wake(t);
  }

  // A message's last slice is at the receiver.
  void arrive(int conn) {
    Connection& c = conns_[static_cast<std::size_t>(conn)];
    ++c.arrived;
    if (slicing_) {
      c.tails.push_back(now_);
      ThreadblockState& r = tbs_[static_cast<std::size_t>(c.receiver)];
      if (r.phase == Phase::tail) {
        r.phase = Phase::working;
        startPass(c.receiver);
        return;
      }
    }
    wake(c.receiver);
  }

  // ---- flows ------------------------------------------------------------------------------
  // Queues the flow ends the network posted, in posting order.
  void queueFlowEnds() {
    for (const FlowEnd& end : net_.posted())
      schedule(end.time, EventKind::flowDone, end.flow, end.version);
    net_.clearPosted();
  }

  int startFlow(int t, double bytes, double baseRate, double efficiency,
                const std::vector<int>& res) {
    const int id = net_.start(now_, t, bytes, baseRate, efficiency, res);
    queueFlowEnds();
    return id;
  }

  void finishFlow(int id) {
    const int t = net_.finish(now_, id);
    queueFlowEnds();
    ++tbs_[static_cast<std::size_t>(t)].pass;
    startPass(t);
  }

  // ---- results ----------------------------------------------------------------------------
  bool recording() const { return options_.criticalPath || options_.trace; }
  int recordOf(int flatStepIndex, int tile) const {
    return stepRecord_[static_cast<std::size_t>(flatStepIndex) * tiles_ +
                       static_cast<std::size_t>(tile)];
  }

  void checkFinished() {
    if (tbsDone_ == static_cast<int>(tbs_.size())) return;
    std::string blocked;
    int shown = 0;
    for (const auto& s : tbs_) {
      if (s.phase == Phase::done) continue;
      if (shown++ == 4) {
        blocked += "; ...";
        break;
      }
      const ir::Step& step = s.program->steps[static_cast<std::size_t>(s.step)];
      blocked += fmt::format("{}rank {} tb {} step {} ({}, tile {})", shown > 1 ? "; " : "", s.rank,
                             s.tb, s.step, ir::opName(step.op), s.tile);
    }
    throw SimulationError(fmt::format(
        "{}: the simulation deadlocked at {:.3f} us: {} threadblocks can never proceed ({}); "
        "check the program with `chorus verify` (FIFOs of {} slots)",
        a_.name, now_ * 1e6, tbs_.size() - static_cast<std::size_t>(tbsDone_), blocked,
        options_.slots));
  }

  SimResult collect() {
    SimResult r;
    r.bytes = options_.bytes;
    r.tiles = callTiles_;
    r.tilesSimulated = tilesSimulated_;
    r.extrapolated = extrapolated_;
    r.stepsExecuted = stepsExecuted_ + cutSteps_;
    r.events = eventCount_ + cutEvents_;
    summarize(r, a_, finishTime_, net_, nodeWorkingSets_);
    if (options_.criticalPath)
      r.criticalPath = criticalPathOf(records_, preds_, [&](int at) { return waitText(at); });
    if (options_.trace) r.trace = std::move(records_);
    return r;
  }

  std::string waitText(int record) const {
    switch (waits_[static_cast<std::size_t>(record)]) {
      case Wait::none:
        return "start";
      case Wait::previous:
        return preds_[static_cast<std::size_t>(record)] == kNone ? "start" : "previous step";
      case Wait::dependency:
      case Wait::data:
      case Wait::slot:
      case Wait::port:
        return waitedOn_[static_cast<std::size_t>(record)];
    }
    return "";
  }

  const ir::Algorithm& a_;
  topology::Fabric& fabric_;
  const SimOptions& options_;
  const topology::DeviceModel& device_;
  const bool slicing_;           // device_.slices > 1: the GPU pipelining model
  const ProtocolCost protocol_;  // of the plan's protocol; Simple's on store-and-forward devices

  std::size_t chunkElems_ = 0;
  std::size_t chunkBytes_ = 0;
  std::size_t tileElems_ = 1;
  std::size_t lastTileElems_ = 1;
  int tiles_ = 1;      // tiles this simulation runs (fewer than the call's in a cut call)
  int callTiles_ = 1;  // the call's tiles
  // Steady state (runToSteadyState).
  int pauseTile_ = kNone;
  bool paused_ = false;
  bool extrapolated_ = false;
  int tilesSimulated_ = 1;
  std::size_t cutSteps_ = 0;  // simulated by the cut calls' copies
  std::size_t cutEvents_ = 0;

  FlowNetwork net_;
  std::vector<int> nodeCpu_;
  std::vector<double> nodeWorkingSets_;  // bytes of the call's buffers per node (nodeWorkingSets)
  std::vector<int> rankEngine_;
  std::vector<PortQueue> ports_;  // per rank, empty when ports are unlimited
  std::vector<ThreadblockState> tbs_;
  std::vector<int> tbIndex_;
  std::vector<int> dependentStart_;
  std::vector<int> dependents_;
  std::vector<StepInfo> steps_;  // by flat step index
  std::vector<FlatDep> deps_;
  std::vector<Connection> conns_;
  std::vector<int> worklist_;
  EventQueue<Event> events_;
  double now_ = 0;
  double finishTime_ = 0;
  int tbsDone_ = 0;
  std::size_t stepsExecuted_ = 0;
  std::size_t eventCount_ = 0;

  // Recording (critical path, trace).
  std::vector<StepRecord> records_;
  std::vector<int> preds_;
  std::vector<Wait> waits_;
  std::vector<std::string> waitedOn_;
  std::vector<double> arrivalTimes_;
  std::vector<int> stepRecord_;
};

}  // namespace

std::optional<perf::Collective> benchCollective(ir::CollectiveKind kind) {
  switch (kind) {
    case ir::CollectiveKind::allreduce:
      return perf::Collective::allreduce;
    case ir::CollectiveKind::allgather:
      return perf::Collective::allgather;
    case ir::CollectiveKind::reducescatter:
      return perf::Collective::reducescatter;
    case ir::CollectiveKind::alltoall:
      return perf::Collective::alltoall;
    case ir::CollectiveKind::broadcast:
      return perf::Collective::broadcast;
    case ir::CollectiveKind::reduce:
      return perf::Collective::reduce;
    case ir::CollectiveKind::custom:
      break;
  }
  return std::nullopt;
}

SimResult simulate(const ir::Algorithm& algorithm, topology::Fabric& fabric,
                   const SimOptions& options) {
  if (ir::hasOneSidedOps(algorithm)) return simulateOneSided(algorithm, fabric, options);
  ir::requireStepEndpoints(algorithm, "simulated");  // plans may arrive unverified
  ir::requireTwoSidedOps(algorithm, "the simulator");
  return Simulation(algorithm, fabric, options).run();
}

}  // namespace chorus::sim
