// The one-sided event simulator. See one_sided_sim.h for the model; docs/simulator.md
// "One-sided plans" for its assumptions.
//
// Algorithm (one call): every threadblock is tried at its current step; a step starts once what
// it waits for is there (a token, a semaphore unit, the barrier's last threadblock, a flushed
// channel, its source packets), then runs its pass (a flow on the shared network) or only
// signals. Tokens, landed packets and proxy queues are the state that wakes blocked steps.
#include "sim/one_sided_sim.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <deque>
#include <limits>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "ir/collective.h"
#include "ir/one_sided_structure.h"
#include "ir/step_endpoints.h"
#include "sim/flow_network.h"
#include "sim/sim_shared.h"
#include "support/error.h"

namespace chorus::sim {
namespace one_sided {
namespace {

constexpr int kNoRecord = -1;
constexpr double kNotYet = std::numeric_limits<double>::infinity();
// An LL packet stores a flag beside every data word: LL16 packets carry 8 data bytes in 16
// (MSCCL++ packet_device.hpp), so packets move twice their data's bytes.
constexpr double kPacketBytesPerDataByte = 2;

enum class OneSidedEvent : std::uint8_t {
  flowDone,   // a pass ended (a threadblock's, or a proxy's put)
  token,      // a signal's token reached its channel end
  stepDone,   // a threadblock's step ends (after its overhead, or a get's latency)
  workReady,  // a threadblock's step overhead passed: its pass starts
  retry,      // a threadblock may start now (packets it reads have landed)
};

using Event = TimedEvent<OneSidedEvent>;

enum class Phase : std::uint8_t { idle, working, done };

struct ThreadblockState {
  int rank = 0;
  int tb = 0;
  const ir::Threadblock* program = nullptr;
  int step = 0;
  Phase phase = Phase::idle;
  int engine = -1;
  int cpu = -1;
  std::vector<int> localResources;  // a local pass's: engine, cpu, the node's memory switch
  double copyRate = 0;
  double reduceRate = 0;
  double lastEnd = 0;
  int lastRecord = kNoRecord;
  int record = kNoRecord;
  // The current step's barrier was joined / passed; its flush waits for this many port items.
  bool joined = false;
  bool passed = false;
  bool flushTicketSet = false;
  std::uint64_t flushTicket = 0;
};

// Something a port channel's proxy carries, in order: a put (a pass) or a signal.
struct PortItem {
  bool signal = false;
  int tb = 0;  // flat threadblock that posted it
  const ir::Step* step = nullptr;
  int record = kNoRecord;
};

// One end of a channel (rank, channel index): the tokens that reached it and were taken, and, for
// a port channel, its proxy's queue.
struct ChannelEnd {
  int rank = 0;
  int peer = 0;
  int paired = -1;  // flat index of the peer's end
  bool port = false;
  std::uint64_t taken = 0;
  std::vector<double> tokenTimes;  // arrival of each token that arrived, in order
  std::vector<int> tokenRecords;   // the signal that sent it
  std::vector<int> waiters;        // threadblocks blocked on a wait here
  std::deque<PortItem> queue;
  bool busy = false;
  std::uint64_t queued = 0;
  std::uint64_t done = 0;
  double lastDone = 0;
  int lastDoneRecord = kNoRecord;
  std::vector<int> flushWaiters;
};

struct PacketSlot {
  double landed = kNotYet;  // when its packets were all there
  int record = kNoRecord;   // the step that wrote them
};

struct Barrier {
  int arrived = 0;
  std::vector<int> waiting;
  int lastRecord = kNoRecord;  // the previous step of the last threadblock to join
};

struct Semaphore {
  std::int64_t value = 0;
  std::vector<int> waiters;
  double lastRelease = 0;
  int lastReleaser = kNoRecord;
};

// What a starting step waited for last (critical path).
struct Cause {
  double time = 0;
  int record = kNoRecord;
  std::string text;
  void consider(double t, int rec, std::string why) {
    if (t < time) return;
    time = t;
    record = rec;
    text = std::move(why);
  }
};

class OneSidedSimulation {
 public:
  OneSidedSimulation(const ir::Algorithm& algorithm, topology::Fabric& fabric,
                     const SimOptions& options)
      : a_(algorithm),
        fabric_(fabric),
        options_(options),
        device_(fabric.topology().node.device),
        latencyScale_(device_.slices > 1 ? protocolCost(algorithm.protocol).latency : 1.0),
        net_(device_.slices > 1) {}

  SimResult run() {
    const auto wallStart = std::chrono::steady_clock::now();
    requireSimulable(a_, fabric_, options_);
    chunkBytes_ = callChunkElems(a_, options_) * options_.elementSize;
    build();
    for (int t = 0; t < static_cast<int>(tbs_.size()); ++t)
      wake(t);
    drain();
    loop();
    checkFinished();
    SimResult result;
    result.bytes = options_.bytes;
    result.stepsExecuted = stepsExecuted_;
    result.events = eventCount_;
    summarize(result, a_, finishTime_, net_, nodeWorkingSets(a_, fabric_.topology(), chunkBytes_));
    collectRecords(result);
    result.simSeconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - wallStart).count();
    return result;
  }

 private:
  // ---- set-up ------------------------------------------------------------------------------
  void build() {
    const topology::Topology& topo = fabric_.topology();
    const HostEngines engines = addHostEngines(net_, topo, a_.nranks);
    const std::vector<double> workingSets = nodeWorkingSets(a_, topo, chunkBytes_);
    const std::vector<std::vector<int>> pairs = ir::pairChannels(a_);
    const auto collective = ir::collectiveOf(a_);
    const auto n = static_cast<std::size_t>(a_.nranks);
    endBase_.assign(n + 1, 0);
    semaphores_.resize(n);
    barriers_.resize(n);
    packets_.resize(n);
    packetWaiters_.resize(n);
    for (const auto& rp : a_.ranks) {
      const auto r = static_cast<std::size_t>(rp.rank);
      endBase_[r + 1] = endBase_[r] + static_cast<int>(rp.channels.size());
      for (int value : rp.semaphores)
        semaphores_[r].push_back(Semaphore{value, {}, 0, kNoRecord});
      for (std::size_t b = 0; b < 3; ++b)
        packets_[r][b].resize(static_cast<std::size_t>(
            ir::oneSidedBufferChunks(a_, *collective, rp.rank, static_cast<ir::BufferKind>(b))));
    }
    for (const auto& rp : a_.ranks) {
      const auto r = static_cast<std::size_t>(rp.rank);
      for (std::size_t c = 0; c < rp.channels.size(); ++c) {
        ChannelEnd end;
        end.rank = rp.rank;
        end.peer = rp.channels[c].peer;
        end.port = rp.channels[c].type == ir::ChannelType::port;
        const int paired = pairs[r][c];
        if (paired >= 0) end.paired = endBase_[static_cast<std::size_t>(end.peer)] + paired;
        ends_.push_back(std::move(end));
      }
      const double workingSet = workingSets[static_cast<std::size_t>(topo.nodeOf(rp.rank))];
      for (const auto& tb : rp.threadblocks) {
        ThreadblockState s;
        s.rank = rp.rank;
        s.tb = tb.id;
        s.program = &tb;
        s.phase = tb.steps.empty() ? Phase::done : Phase::idle;
        if (s.phase == Phase::done) ++tbsDone_;
        if (!engines.rankEngine.empty()) s.engine = engines.rankEngine[r];
        if (!engines.nodeCpu.empty())
          s.cpu = engines.nodeCpu[static_cast<std::size_t>(topo.nodeOf(rp.rank))];
        for (int res : {s.engine, s.cpu})
          if (res >= 0) s.localResources.push_back(res);
        for (int res : fabric_.localResources(rp.rank))
          s.localResources.push_back(net_.fabricResource(fabric_, res));
        s.copyRate =
            rateOrInfinity(topology::rateAt(device_.copyCurve, workingSet, device_.copyRate));
        s.reduceRate =
            rateOrInfinity(topology::rateAt(device_.reduceCurve, workingSet, device_.reduceRate));
        tbs_.push_back(std::move(s));
      }
    }
  }

  ChannelEnd& endOf(int rank, int channel) {
    return ends_[static_cast<std::size_t>(endBase_[static_cast<std::size_t>(rank)] + channel)];
  }
  int endIndex(int rank, int channel) const {
    return endBase_[static_cast<std::size_t>(rank)] + channel;
  }

  // Seconds from a message leaving `src` to its arrival at `dst`: the route's latency, the
  // device's message latency (scaled by the protocol on slicing devices, as for two-sided
  // plans) and the receiver's expected wake-up.
  double delay(int src, int dst) {
    const topology::Route& route = fabric_.route(src, dst);
    return route.latency + device_.messageLatency * latencyScale_ +
           expectedWake(fabric_.topology(), dst, a_.nranks);
  }

  // The route's resources (as simulator resources) from `src` to `dst`.
  std::vector<int> routeResources(int src, int dst) {
    std::vector<int> out;
    for (int r : fabric_.route(src, dst).resources)
      out.push_back(net_.fabricResource(fabric_, r));
    return out;
  }

  // ---- events ------------------------------------------------------------------------------
  void schedule(double time, OneSidedEvent kind, int id, std::uint32_t version = 0) {
    events_.push(Event{time, kind, id, version});
  }

  void queueFlowEnds() {
    for (const FlowEnd& end : net_.posted())
      schedule(end.time, OneSidedEvent::flowDone, end.flow, end.version);
    net_.clearPosted();
  }

  void loop() {
    while (!events_.empty()) {
      const Event e = events_.pop();
      ++eventCount_;
      now_ = e.time;
      switch (e.kind) {
        case OneSidedEvent::flowDone: {
          if (!net_.current(FlowEnd{e.time, e.id, e.version})) break;
          const int owner = net_.finish(now_, e.id);
          queueFlowEnds();
          if (owner < static_cast<int>(tbs_.size()))
            passDone(owner);
          else
            portPutDone(owner - static_cast<int>(tbs_.size()));
          break;
        }
        case OneSidedEvent::token:
          tokenArrived(e.id);
          break;
        case OneSidedEvent::stepDone:
          endStep(e.id);
          break;
        case OneSidedEvent::workReady:
          startWork(e.id);
          break;
        case OneSidedEvent::retry:
          wake(e.id);
          break;
      }
      drain();
    }
  }

  void wake(int t) { worklist_.push_back(t); }
  void wakeAll(std::vector<int>& list) {
    for (int t : list)
      wake(t);
    list.clear();
  }
  void drain() {
    while (!worklist_.empty()) {
      const int t = worklist_.back();
      worklist_.pop_back();
      tryStart(t);
    }
  }

  // ---- steps -------------------------------------------------------------------------------
  void tryStart(int t) {
    ThreadblockState& s = tbs_[static_cast<std::size_t>(t)];
    if (s.phase != Phase::idle) return;
    const ir::Step& step = s.program->steps[static_cast<std::size_t>(s.step)];
    Cause cause{s.lastEnd, s.lastRecord, "previous step"};
    switch (step.op) {
      case ir::OpKind::wait:
      case ir::OpKind::relaxedWait: {
        ChannelEnd& end = endOf(s.rank, step.channel);
        if (end.tokenTimes.size() <= end.taken) {
          end.waiters.push_back(t);
          return;
        }
        const auto ticket = static_cast<std::size_t>(end.taken);
        cause.consider(end.tokenTimes[ticket], end.tokenRecords[ticket],
                       fmt::format("signal from rank {} on channel {}", end.peer, step.channel));
        ++end.taken;
        break;
      }
      case ir::OpKind::semAcquire: {
        Semaphore& sem =
            semaphores_[static_cast<std::size_t>(s.rank)][static_cast<std::size_t>(step.channel)];
        if (sem.value <= 0) {
          sem.waiters.push_back(t);
          return;
        }
        --sem.value;
        cause.consider(sem.lastRelease, sem.lastReleaser,
                       fmt::format("semaphore {} released", step.channel));
        break;
      }
      case ir::OpKind::barrier: {
        Barrier& barrier = barriers_[static_cast<std::size_t>(s.rank)][step.channel];
        if (!s.joined) {
          s.joined = true;
          barrier.waiting.push_back(t);
          barrier.lastRecord = s.lastRecord;
          if (++barrier.arrived >= step.count) {
            for (int w : barrier.waiting)
              tbs_[static_cast<std::size_t>(w)].passed = true;
            barrier.arrived = 0;
            wakeAll(barrier.waiting);
          }
        }
        if (!s.passed) return;
        cause.consider(now_, barrier.lastRecord, fmt::format("barrier {}", step.channel));
        s.joined = false;
        s.passed = false;
        break;
      }
      case ir::OpKind::flush: {
        ChannelEnd& end = endOf(s.rank, step.channel);
        if (!s.flushTicketSet) {
          s.flushTicketSet = true;
          s.flushTicket = end.queued;
        }
        if (end.done < s.flushTicket) {
          end.flushWaiters.push_back(t);
          return;
        }
        s.flushTicketSet = false;
        cause.consider(end.lastDone, end.lastDoneRecord,
                       fmt::format("puts on channel {} done", step.channel));
        break;
      }
      default:
        if (step.srcPackets && !step.rawPackets && !packetsLanded(s, step, cause, t)) return;
        break;
    }
    start(t, step, cause);
  }

  // Whether the packets the step reads have all landed; registers the threadblock to be tried
  // again when they may have.
  bool packetsLanded(const ThreadblockState& s, const ir::Step& step, Cause& cause, int t) {
    const int owner = ir::srcOwner(s.rank, step);
    const auto& slots =
        packets_[static_cast<std::size_t>(owner)][static_cast<std::size_t>(step.srcBuffer)];
    double last = 0;
    int record = kNoRecord;
    for (int i = step.srcIndex; i < step.srcIndex + step.count; ++i) {
      const PacketSlot& slot = slots[static_cast<std::size_t>(i)];
      if (slot.landed == kNotYet) {
        packetWaiters_[static_cast<std::size_t>(owner)].push_back(t);
        return false;
      }
      if (slot.landed >= last) {
        last = slot.landed;
        record = slot.record;
      }
    }
    if (last > now_) {
      schedule(last, OneSidedEvent::retry, t);
      return false;
    }
    cause.consider(
        last, record,
        fmt::format("packets of rank {}'s {}[{}..{})", owner, ir::bufferName(step.srcBuffer),
                    step.srcIndex, step.srcIndex + step.count));
    return true;
  }

  // The step's packets written by `record` land at `time`.
  void packetsWritten(int owner, const ir::Step& step, double time, int record) {
    auto& slots =
        packets_[static_cast<std::size_t>(owner)][static_cast<std::size_t>(step.dstBuffer)];
    for (int i = step.dstIndex; i < step.dstIndex + step.count; ++i)
      slots[static_cast<std::size_t>(i)] = PacketSlot{time, record};
    wakeAll(packetWaiters_[static_cast<std::size_t>(owner)]);
  }

  double stepBytes(const ir::Step& step) const {
    const double bytes = static_cast<double>(chunkBytes_) * step.count;
    return step.srcPackets || step.dstPackets ? bytes * kPacketBytesPerDataByte : bytes;
  }

  bool onPortChannel(int rank, const ir::Step& step) const {
    if (step.channel < 0) return false;
    return a_.ranks[static_cast<std::size_t>(rank)]
               .channels[static_cast<std::size_t>(step.channel)]
               .type == ir::ChannelType::port;
  }

  // Everything the step waited for is there: it starts now.
  void start(int t, const ir::Step& step, const Cause& cause) {
    ThreadblockState& s = tbs_[static_cast<std::size_t>(t)];
    ++stepsExecuted_;
    s.phase = Phase::working;
    s.record = kNoRecord;
    if (recording()) {
      s.record = static_cast<int>(records_.size());
      records_.push_back(StepRecord{
          .rank = s.rank,
          .tb = s.tb,
          .step = s.step,
          .op = step.op,
          .peer = step.peer,
          .bytes = ir::opMovesNoData(step.op) ? 0 : static_cast<std::uint64_t>(stepBytes(step)),
          .ready = now_,
          .start = now_,
          .end = now_,
          .waitedFor = {}});
      preds_.push_back(cause.record);
      waitedOn_.push_back(cause.record == kNoRecord ? "start" : cause.text);
    }
    switch (step.op) {
      case ir::OpKind::signal:
      case ir::OpKind::relaxedSignal: {
        const int from = endIndex(s.rank, step.channel);
        if (ends_[static_cast<std::size_t>(from)].port) {
          postToProxy(from, PortItem{true, t, &step, s.record});
        } else {
          sendToken(from, s.record);
        }
        endStep(t);
        return;
      }
      case ir::OpKind::semRelease: {
        Semaphore& sem =
            semaphores_[static_cast<std::size_t>(s.rank)][static_cast<std::size_t>(step.channel)];
        ++sem.value;
        sem.lastRelease = now_;
        sem.lastReleaser = s.record;
        wakeAll(sem.waiters);
        endStep(t);
        return;
      }
      default:
        break;
    }
    if (ir::opMovesNoData(step.op)) {
      endStep(t);
      return;
    }
    if (device_.stepOverhead > 0) {
      schedule(now_ + device_.stepOverhead, OneSidedEvent::workReady, t);
      return;
    }
    startWork(t);
  }

  // The step's data movement, after its overhead.
  void startWork(int t) {
    ThreadblockState& s = tbs_[static_cast<std::size_t>(t)];
    const ir::Step& step = s.program->steps[static_cast<std::size_t>(s.step)];
    if (step.op == ir::OpKind::put && onPortChannel(s.rank, step)) {
      postToProxy(endIndex(s.rank, step.channel), PortItem{false, t, &step, s.record});
      endStep(t);
      return;
    }
    std::vector<int> resources;
    for (int r : {s.engine, s.cpu})
      if (r >= 0) resources.push_back(r);
    switch (ir::opRemoteOperand(step.op)) {
      case ir::RemoteOperand::dst:
        for (int r : routeResources(s.rank, step.peer))
          resources.push_back(r);
        break;
      case ir::RemoteOperand::src:
        for (int r : routeResources(step.peer, s.rank))
          resources.push_back(r);
        break;
      case ir::RemoteOperand::none:
        resources = s.localResources;
        break;
    }
    const bool reduces = ir::opReadsDst(step.op);
    const double base = reduces ? s.reduceRate : s.copyRate;
    const double bytes = stepBytes(step);
    if (bytes > 0 && net_.bounded(base, resources)) {
      net_.start(now_, t, bytes, base, 1.0, resources);
      queueFlowEnds();
      return;
    }
    passDone(t);
  }

  // A threadblock's pass ended.
  void passDone(int t) {
    ThreadblockState& s = tbs_[static_cast<std::size_t>(t)];
    const ir::Step& step = s.program->steps[static_cast<std::size_t>(s.step)];
    switch (ir::opRemoteOperand(step.op)) {
      case ir::RemoteOperand::dst:
        if (step.dstPackets)
          packetsWritten(step.peer, step, now_ + delay(s.rank, step.peer), s.record);
        break;
      case ir::RemoteOperand::src:
        // The peer's data is here α after it left.
        schedule(now_ + delay(step.peer, s.rank), OneSidedEvent::stepDone, t);
        return;
      case ir::RemoteOperand::none:
        if (step.dstPackets) packetsWritten(s.rank, step, now_, s.record);
        break;
    }
    endStep(t);
  }

  void endStep(int t) {
    ThreadblockState& s = tbs_[static_cast<std::size_t>(t)];
    if (s.record != kNoRecord) records_[static_cast<std::size_t>(s.record)].end = now_;
    finishTime_ = std::max(finishTime_, now_);
    s.lastEnd = now_;
    s.lastRecord = s.record;
    if (++s.step == static_cast<int>(s.program->steps.size())) {
      s.phase = Phase::done;
      ++tbsDone_;
      return;
    }
    s.phase = Phase::idle;
    wake(t);
  }

  // ---- tokens and proxies ------------------------------------------------------------------
  void sendToken(int from, int record) {
    const ChannelEnd& end = ends_[static_cast<std::size_t>(from)];
    tokensInFlight_.push_back({end.paired, record});
    schedule(now_ + delay(end.rank, end.peer), OneSidedEvent::token,
             static_cast<int>(tokensInFlight_.size()) - 1);
  }

  void tokenArrived(int token) {
    const auto [at, record] = tokensInFlight_[static_cast<std::size_t>(token)];
    ChannelEnd& end = ends_[static_cast<std::size_t>(at)];
    end.tokenTimes.push_back(now_);
    end.tokenRecords.push_back(record);
    wakeAll(end.waiters);
  }

  void postToProxy(int at, PortItem item) {
    ChannelEnd& end = ends_[static_cast<std::size_t>(at)];
    end.queue.push_back(item);
    ++end.queued;
    runProxy(at);
  }

  // Carries the channel's queued items in order while no put is in flight.
  void runProxy(int at) {
    ChannelEnd& end = ends_[static_cast<std::size_t>(at)];
    while (!end.busy && !end.queue.empty()) {
      const PortItem item = end.queue.front();
      if (item.signal) {
        end.queue.pop_front();
        sendToken(at, item.record);
        itemDone(at, item.record);
        continue;
      }
      const double bytes = stepBytes(*item.step);
      std::vector<int> resources = routeResources(end.rank, end.peer);
      if (bytes > 0 && net_.bounded(kNotYet, resources)) {
        end.busy = true;
        net_.start(now_, static_cast<int>(tbs_.size()) + at, bytes, kNotYet, 1.0, resources);
        queueFlowEnds();
        return;
      }
      end.queue.pop_front();
      landPortPut(end, item);
      itemDone(at, item.record);
    }
  }

  void portPutDone(int at) {
    ChannelEnd& end = ends_[static_cast<std::size_t>(at)];
    const PortItem item = end.queue.front();
    end.queue.pop_front();
    end.busy = false;
    landPortPut(end, item);
    itemDone(at, item.record);
    runProxy(at);
  }

  void landPortPut(const ChannelEnd& end, const PortItem& item) {
    if (item.step->dstPackets)
      packetsWritten(end.peer, *item.step, now_ + delay(end.rank, end.peer), item.record);
  }

  void itemDone(int at, int record) {
    ChannelEnd& end = ends_[static_cast<std::size_t>(at)];
    ++end.done;
    end.lastDone = now_;
    end.lastDoneRecord = record;
    finishTime_ = std::max(finishTime_, now_);
    wakeAll(end.flushWaiters);
  }

  // ---- results -----------------------------------------------------------------------------
  bool recording() const { return options_.criticalPath || options_.trace; }

  void checkFinished() const {
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
      std::string what(ir::opName(step.op));
      if (ir::opTakesStepPeer(step.op)) what += fmt::format(" with rank {}", step.peer);
      if (step.channel >= 0) what += fmt::format(" on {}", step.channel);
      blocked += fmt::format("{}rank {} tb {} step {} ({})", shown > 1 ? "; " : "", s.rank, s.tb,
                             s.step, what);
    }
    throw SimulationError(fmt::format(
        "{}: the simulation deadlocked at {:.3f} us: {} threadblocks can never "
        "proceed ({}); check the plan with `chorus verify`",
        a_.name, now_ * 1e6, tbs_.size() - static_cast<std::size_t>(tbsDone_), blocked));
  }

  void collectRecords(SimResult& r) {
    if (options_.criticalPath)
      r.criticalPath = criticalPathOf(
          records_, preds_, [&](int at) { return waitedOn_[static_cast<std::size_t>(at)]; });
    if (options_.trace) r.trace = std::move(records_);
  }

  const ir::Algorithm& a_;
  topology::Fabric& fabric_;
  const SimOptions& options_;
  const topology::DeviceModel& device_;
  const double latencyScale_;
  FlowNetwork net_;
  std::size_t chunkBytes_ = 0;

  std::vector<ThreadblockState> tbs_;
  std::vector<int> endBase_;  // flat index of each rank's channel 0
  std::vector<ChannelEnd> ends_;
  std::vector<std::pair<int, int>> tokensInFlight_;  // (channel end, signal record) per token
  std::vector<std::vector<Semaphore>> semaphores_;
  std::vector<std::map<int, Barrier>> barriers_;
  std::vector<std::array<std::vector<PacketSlot>, 3>> packets_;  // rank -> buffer -> chunk
  std::vector<std::vector<int>> packetWaiters_;                  // per rank whose packets
  EventQueue<Event> events_;
  std::vector<int> worklist_;
  double now_ = 0;
  double finishTime_ = 0;
  int tbsDone_ = 0;
  std::size_t stepsExecuted_ = 0;
  std::size_t eventCount_ = 0;

  std::vector<StepRecord> records_;
  std::vector<int> preds_;
  std::vector<std::string> waitedOn_;
};

}  // namespace
}  // namespace one_sided

SimResult simulateOneSided(const ir::Algorithm& algorithm, topology::Fabric& fabric,
                           const SimOptions& options) {
  ir::requireOneSidedStructure(algorithm, "simulated");
  return one_sided::OneSidedSimulation(algorithm, fabric, options).run();
}

}  // namespace chorus::sim
