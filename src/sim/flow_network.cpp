#include "sim/flow_network.h"

#include <algorithm>
#include <limits>

namespace chorus::sim {
namespace {

constexpr double kUnlimitedRate = std::numeric_limits<double>::infinity();

// Flows are charged in bytes; a flow with fewer than this many bytes left is finished (guards
// against rounding when rates change mid-flow).
constexpr double kFlowByteEpsilon = 1e-6;

}  // namespace

int FlowNetwork::addResource(std::string name, ShareKind kind, double bandwidth, int capacity,
                             int fabricIndex) {
  SimResource r;
  r.name = std::move(name);
  r.kind = kind;
  r.bandwidth = bandwidth;
  r.capacity = capacity;
  r.fabricIndex = fabricIndex;
  resources_.push_back(std::move(r));
  return static_cast<int>(resources_.size()) - 1;
}

int FlowNetwork::fabricResource(const topology::Fabric& fabric, int index) {
  auto [it, inserted] = fabricMap_.try_emplace(index, -1);
  if (inserted) {
    const topology::Resource& r = fabric.resources()[static_cast<std::size_t>(index)];
    it->second =
        addResource(r.name, r.memory ? ShareKind::memory : ShareKind::wire, r.bandwidth, 0, index);
  }
  return it->second;
}

void FlowNetwork::nest(int engine, int cpu) {
  resources_[static_cast<std::size_t>(engine)].parent = cpu;
  resources_[static_cast<std::size_t>(cpu)].hasChildren = true;
}

bool FlowNetwork::bounded(double baseRate, const std::vector<int>& resources) const {
  return baseRate < kUnlimitedRate || std::any_of(resources.begin(), resources.end(), [&](int r) {
           return resources_[static_cast<std::size_t>(r)].kind != ShareKind::timeShare;
         });
}

int FlowNetwork::start(double now, int owner, double bytes, double baseRate, double efficiency,
                       const std::vector<int>& resources) {
  int id;
  if (!freeFlows_.empty()) {
    id = freeFlows_.back();
    freeFlows_.pop_back();
  } else {
    id = static_cast<int>(flows_.size());
    flows_.emplace_back();
  }
  Flow& f = flows_[static_cast<std::size_t>(id)];
  f.active = true;
  f.owner = owner;
  f.bytes = bytes;
  f.remaining = bytes;
  f.baseRate = baseRate;
  f.efficiency = efficiency;
  f.updated = now;
  f.resources.assign(resources.begin(), resources.end());
  for (int r : f.resources) {
    SimResource& sr = resources_[static_cast<std::size_t>(r)];
    if (sr.flows.empty()) sr.busySince = now;
    sr.flows.push_back(id);
    if (sr.parent != -1) changeDemand(sr, sr.flows.size() - 1);
  }
  f.rate = 0;
  reschedule(now, id);
  updateNeighbours(now, id);
  return id;
}

bool FlowNetwork::current(const FlowEnd& end) const {
  const Flow& f = flows_[static_cast<std::size_t>(end.flow)];
  return f.active && f.version == end.version;
}

int FlowNetwork::finish(double now, int id) {
  Flow& f = flows_[static_cast<std::size_t>(id)];
  f.active = false;
  ++f.version;
  for (int r : f.resources) {
    SimResource& sr = resources_[static_cast<std::size_t>(r)];
    auto it = std::find(sr.flows.begin(), sr.flows.end(), id);
    *it = sr.flows.back();
    sr.flows.pop_back();
    if (sr.parent != -1) changeDemand(sr, sr.flows.size() + 1);
    if (sr.flows.empty()) sr.busy += now - sr.busySince;
    if (sr.kind != ShareKind::timeShare) sr.bytes += f.bytes;
  }
  updateNeighbours(now, id);
  freeFlows_.push_back(id);
  return f.owner;
}

// A rank engine's flow count changed from `before`: its node cpu's demand follows.
void FlowNetwork::changeDemand(const SimResource& engine, std::size_t before) {
  const auto inUse = [&](std::size_t flows) {
    return std::min(static_cast<double>(engine.capacity), static_cast<double>(flows));
  };
  resources_[static_cast<std::size_t>(engine.parent)].demand +=
      inUse(engine.flows.size()) - inUse(before);
}

// Rate of flow `f` from the current shares (the file comment of flow_network.h).
double FlowNetwork::rateOf(const Flow& f) const {
  double engine = f.baseRate;
  double wire = kUnlimitedRate;
  for (int r : f.resources) {
    const SimResource& sr = resources_[static_cast<std::size_t>(r)];
    const double n = static_cast<double>(sr.flows.size());
    switch (sr.kind) {
      case ShareKind::timeShare: {
        // Nested shares multiply: a node's cores among its busy engines, then an engine
        // among its flows.
        const double load = sr.hasChildren ? sr.demand : n;
        if (load > sr.capacity) engine *= sr.capacity / load;
        break;
      }
      case ShareKind::memory:
        engine = std::min(engine, sr.bandwidth / n);
        break;
      case ShareKind::wire:
        wire = std::min(wire, sr.bandwidth / n);
        break;
    }
  }
  // A slicing device's SM fills slice k+1 while the wire drains slice k.
  if (slicing_) return f.efficiency * std::min(engine, wire);
  return f.efficiency / (1.0 / engine + 1.0 / wire);
}

// Brings `remaining` up to now at the old rate, takes the new rate and posts the end.
void FlowNetwork::reschedule(double now, int id) {
  Flow& f = flows_[static_cast<std::size_t>(id)];
  if (f.rate > 0) f.remaining -= f.rate * (now - f.updated);
  f.remaining = std::max(f.remaining, 0.0);
  f.updated = now;
  const double rate = rateOf(f);
  if (rate == f.rate && f.remaining > kFlowByteEpsilon) return;  // its end event still holds
  f.rate = rate;
  ++f.version;
  const double left = f.remaining > kFlowByteEpsilon ? f.remaining / rate : 0.0;
  posted_.push_back(FlowEnd{now + left, id, f.version});
}

// A flow started or ended: every other flow on its resources may change rate.
void FlowNetwork::updateNeighbours(double now, int id) {
  const Flow& f = flows_[static_cast<std::size_t>(id)];
  touched_.clear();
  for (int r : f.resources)
    for (int other : resources_[static_cast<std::size_t>(r)].flows)
      if (other != id) touched_.push_back(other);
  if (touched_.size() > 1) {
    std::sort(touched_.begin(), touched_.end());
    touched_.erase(std::unique(touched_.begin(), touched_.end()), touched_.end());
  }
  for (int other : touched_)
    reschedule(now, other);
}

}  // namespace chorus::sim
