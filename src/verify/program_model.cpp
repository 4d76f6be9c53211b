#include "verify/program_model.h"

#include <map>
#include <tuple>

#include <fmt/format.h>

#include "support/error.h"

namespace chorus::verify {

namespace {

using ConnectionKey = std::tuple<int, int, int>;  // sender rank, receiver rank, channel

struct ConnectionSides {
  std::vector<int> senders;  // global tb ids
  std::vector<int> receivers;
};

std::string listTbs(const ProgramModel& model, const std::vector<int>& tbs) {
  std::string out;
  for (std::size_t i = 0; i < tbs.size(); ++i) {
    if (i) out += i + 1 == tbs.size() ? " and " : ", ";
    out += fmt::format("tb {}", model.tbs[tbs[i]].tb);
  }
  return out;
}

std::vector<int> stepsWhere(const ProgramModel& model, int globalTb, bool (*pred)(ir::OpKind)) {
  std::vector<int> nodes;
  const TbInfo& info = model.tbs[globalTb];
  const auto& steps = model.threadblock(globalTb).steps;
  for (int s = 0; s < info.steps; ++s)
    if (pred(steps[s].op)) nodes.push_back(info.firstNode + s);
  return nodes;
}

void numberNodes(ProgramModel& model) {
  const ir::Algorithm& algorithm = *model.algorithm;
  int node = 0;
  for (int r = 0; r < algorithm.nranks; ++r) {
    model.rankFirstTb.push_back(static_cast<int>(model.tbs.size()));
    const auto& tbs = algorithm.ranks[r].threadblocks;
    for (int t = 0; t < static_cast<int>(tbs.size()); ++t) {
      const int global = static_cast<int>(model.tbs.size());
      const int steps = static_cast<int>(tbs[t].steps.size());
      model.tbs.push_back(TbInfo{r, t, node, steps, -1, -1});
      model.nodeTb.insert(model.nodeTb.end(), steps, global);
      node += steps;
    }
  }
  model.rankFirstTb.push_back(static_cast<int>(model.tbs.size()));
}

void assignSlots(ProgramModel& model) {
  const ir::Algorithm& algorithm = *model.algorithm;
  const ir::Collective& collective = *model.collective;
  const int n = algorithm.nranks;
  model.inputSlot.resize(n);
  model.outputSlot.resize(n);
  model.scratchBase.resize(n);
  int next = 0;
  for (int r = 0; r < n; ++r) {
    const int in = collective.inputChunks(r);
    const int out = collective.outputChunks(r);
    const int scratch = algorithm.ranks[r].scratchChunks;
    const int base = next;
    next += in + out + scratch;
    model.slotRank.insert(model.slotRank.end(), in + out + scratch, r);
    for (int i = 0; i < in; ++i)
      model.slotLocation.push_back({ir::BufferKind::input, i});
    for (int i = 0; i < out; ++i)
      model.slotLocation.push_back({ir::BufferKind::output, i});
    for (int i = 0; i < scratch; ++i)
      model.slotLocation.push_back({ir::BufferKind::scratch, i});
    auto place = [&](ir::BufferKind buffer, int index) {
      const ir::Location c = collective.canonical(r, {buffer, index});
      const int limit = c.buffer == ir::BufferKind::input ? in : out;
      CHORUS_INTERNAL_ASSERT(c.buffer != ir::BufferKind::scratch && c.index >= 0 && c.index < limit,
                             fmt::format("{}: canonical({}, {}[{}]) is out of range",
                                         collective.name(), r, ir::bufferName(buffer), index));
      return base + (c.buffer == ir::BufferKind::input ? 0 : in) + c.index;
    };
    for (int i = 0; i < in; ++i)
      model.inputSlot[r].push_back(place(ir::BufferKind::input, i));
    for (int i = 0; i < out; ++i)
      model.outputSlot[r].push_back(place(ir::BufferKind::output, i));
    model.scratchBase[r] = base + in + out;
  }
  model.slotHasInitialValue.assign(model.slotRank.size(), 0);
  for (int r = 0; r < n; ++r)
    for (int i = 0; i < static_cast<int>(model.inputSlot[r].size()); ++i)
      if (collective.initialInput(r, i).initialized())
        model.slotHasInitialValue[model.inputSlot[r][i]] = 1;
}

}  // namespace

int ProgramModel::slotOf(int rank, ir::BufferKind buffer, int index) const {
  switch (buffer) {
    case ir::BufferKind::input:
      return inputSlot[rank][index];
    case ir::BufferKind::output:
      return outputSlot[rank][index];
    case ir::BufferKind::scratch:
      return scratchBase[rank] + index;
  }
  return -1;
}

std::string ProgramModel::nodeName(int node) const {
  const TbInfo& info = tbs[nodeTb[node]];
  return describeStepRef(info.rank, info.tb, node - info.firstNode);
}

std::string ProgramModel::slotName(int slot) const {
  const ir::Location& l = slotLocation[slot];
  return fmt::format("{}[{}]", ir::bufferName(l.buffer), l.index);
}

std::unique_ptr<ProgramModel> buildProgramModel(const ir::Algorithm& algorithm,
                                                std::shared_ptr<const ir::Collective> collective,
                                                FindingSink& sink) {
  auto model = std::make_unique<ProgramModel>();
  model->algorithm = &algorithm;
  model->collective = std::move(collective);
  numberNodes(*model);
  assignSlots(*model);

  std::map<ConnectionKey, ConnectionSides> sides;
  for (int g = 0; g < static_cast<int>(model->tbs.size()); ++g) {
    const TbInfo& info = model->tbs[g];
    const ir::Threadblock& tb = model->threadblock(g);
    if (tb.sendPeer >= 0) sides[{info.rank, tb.sendPeer, tb.channel}].senders.push_back(g);
    if (tb.recvPeer >= 0) sides[{tb.recvPeer, info.rank, tb.channel}].receivers.push_back(g);
  }

  bool sound = true;
  auto fail = [&](int rank, int tb, int step, std::string message) {
    sound = false;
    sink.add(FindingKind::malformed, rank, tb, step, std::move(message));
  };
  for (const auto& [key, side] : sides) {
    const auto [a, b, c] = key;
    if (side.senders.size() > 1)
      fail(a, model->tbs[side.senders[1]].tb, -1,
           fmt::format("rank {} has {} threadblocks ({}) sending to rank {} on channel {}; a "
                       "connection (sender, receiver, channel) has exactly one tb per side, so "
                       "merge them or move one to another channel",
                       a, side.senders.size(), listTbs(*model, side.senders), b, c));
    if (side.receivers.size() > 1)
      fail(b, model->tbs[side.receivers[1]].tb, -1,
           fmt::format("rank {} has {} threadblocks ({}) receiving from rank {} on channel {}; a "
                       "connection (sender, receiver, channel) has exactly one tb per side, so "
                       "merge them or move one to another channel",
                       b, side.receivers.size(), listTbs(*model, side.receivers), a, c));
    if (side.senders.size() > 1 || side.receivers.size() > 1) continue;
    const int sender = side.senders.empty() ? -1 : side.senders[0];
    const int receiver = side.receivers.empty() ? -1 : side.receivers[0];
    const std::vector<int> sends =
        sender < 0 ? std::vector<int>{} : stepsWhere(*model, sender, &ir::opSends);
    const std::vector<int> recvs =
        receiver < 0 ? std::vector<int>{} : stepsWhere(*model, receiver, &ir::opReceives);
    if (receiver < 0) {
      if (!sends.empty())
        fail(a, model->tbs[sender].tb, model->stepOf(sends[0]),
             fmt::format("{} ({}) sends on channel {}, but rank {} has no threadblock receiving "
                         "from rank {} on channel {}; add a tb with recv={} chan={} on rank {}",
                         model->nodeName(sends[0]),
                         describeOp(model->threadblock(sender), model->step(sends[0])), c, b, a, c,
                         a, c, b));
      continue;
    }
    if (sender < 0) {
      if (!recvs.empty())
        fail(b, model->tbs[receiver].tb, model->stepOf(recvs[0]),
             fmt::format("{} ({}) receives on channel {}, but rank {} has no threadblock sending "
                         "to rank {} on channel {}; add a tb with send={} chan={} on rank {}",
                         model->nodeName(recvs[0]),
                         describeOp(model->threadblock(receiver), model->step(recvs[0])), c, a, b,
                         c, b, c, a));
      continue;
    }
    if (sends.size() != recvs.size()) {
      const bool moreSends = sends.size() > recvs.size();
      const std::size_t k = std::min(sends.size(), recvs.size());
      const int extra = moreSends ? sends[k] : recvs[k];
      const int extraTb = moreSends ? sender : receiver;
      fail(model->tbs[extraTb].rank, model->tbs[extraTb].tb, model->stepOf(extra),
           fmt::format("{} ({}) is {} number {} on the connection rank {} -> rank {} channel {}, "
                       "but {} {} only {}; the k-th send on a connection is received by the "
                       "k-th receive, so every {} needs a matching {}",
                       model->nodeName(extra),
                       describeOp(model->threadblock(extraTb), model->step(extra)),
                       moreSends ? "send" : "receive", k + 1, a, b, c,
                       moreSends ? fmt::format("rank {} tb {}", b, model->tbs[receiver].tb)
                                 : fmt::format("rank {} tb {}", a, model->tbs[sender].tb),
                       moreSends ? "receives" : "sends",
                       moreSends ? fmt::format("{} message(s) from it", recvs.size())
                                 : fmt::format("{} message(s) on it", sends.size()),
                       moreSends ? "send" : "receive", moreSends ? "receive" : "send"));
      continue;
    }
    for (std::size_t k = 0; k < sends.size(); ++k) {
      const ir::Step& s = model->step(sends[k]);
      const ir::Step& r = model->step(recvs[k]);
      if (s.count != r.count)
        fail(a, model->tbs[sender].tb, model->stepOf(sends[k]),
             fmt::format("{} ({}) sends {} chunk(s), but its matching receive {} ({}) takes {}; "
                         "the k-th send on a connection is received by the k-th receive, so their "
                         "counts must match",
                         model->nodeName(sends[k]), describeOp(model->threadblock(sender), s),
                         s.count, model->nodeName(recvs[k]),
                         describeOp(model->threadblock(receiver), r), r.count));
    }
    const int id = static_cast<int>(model->connections.size());
    model->tbs[sender].outConn = id;
    model->tbs[receiver].inConn = id;
    model->connections.push_back(Connection{sender, receiver, c, sends, recvs});
  }
  if (!sound) return nullptr;
  return model;
}

}  // namespace chorus::verify
