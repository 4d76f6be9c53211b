#include "ir/mscclpp_plan_writer.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ir/one_sided_lowering.h"
#include "ir/step_endpoints.h"
#include "ir/step_semantics.h"
#include "support/error.h"

// Field names, order and op names as MSCCL++'s DSL writes them and its executor reads them
// (python/mscclpp/language/program.py and src/core/executor/execution_plan.cc at 1f5f065).
namespace chorus::ir::mscclpp_writer {

using Json = nlohmann::ordered_json;

// MSCCL++'s executor capacities (src/core/include/execution_common.hpp at 1f5f065).
constexpr std::size_t kMaxOperations = 64;
constexpr std::size_t kMaxChannels = 16;       // per type per threadblock
constexpr std::size_t kMaxRemoteBuffers = 16;  // per access type per threadblock
constexpr int kMaxBarriers = 16;

const char* bufferLetter(BufferKind buffer) {
  switch (buffer) {
    case BufferKind::input:
      return "i";
    case BufferKind::output:
      return "o";
    case BufferKind::scratch:
      break;
  }
  return "s";
}

// 0 memory, 1 port: the channel type a step's remote access or signal goes through.
int typeOf(const RankProgram& program, const Step& s) {
  // Barriers and semaphore ops name their barrier or semaphore in Step::channel.
  if (s.channel < 0 || !opTakesStepPeer(s.op)) return 0;
  return program.channels[static_cast<std::size_t>(s.channel)].type == ChannelType::port ? 1 : 0;
}

// A plain reduce into D followed by a memory-channel put of exactly D: one `res` op.
bool fusesIntoRes(const RankProgram& program, const Step& reduce, const Step& put) {
  return reduce.op == OpKind::reduce && !reduce.srcPackets && put.op == OpKind::put &&
         !put.srcPackets && !put.dstPackets && typeOf(program, put) == 0 &&
         put.srcBuffer == reduce.dstBuffer && put.srcIndex == reduce.dstIndex &&
         put.count == reduce.count;
}

// Cuts every threadblock with more operations than the executor runs into consecutive
// threadblocks (the first keeps its id, the others are appended), chained by a semaphore: a
// part ends with nop + semRelease and the next starts with semAcquire + nop, so each runs after
// the one before, and shares its channels (MSCCL++ keeps a channel's token counts in device
// memory, semaphore_device.hpp, so waits on it from several threadblocks take its tokens in
// turn).
void splitLongThreadblocks(Algorithm& plan) {
  constexpr int kBudget = static_cast<int>(kMaxOperations) - 4;  // room for the chain's ops
  for (RankProgram& program : plan.ranks) {
    const std::size_t original = program.threadblocks.size();
    for (std::size_t t = 0; t < original; ++t) {
      std::vector<Step> steps = std::move(program.threadblocks[t].steps);
      std::vector<std::vector<Step>> parts(1);
      int ops = 0;
      for (std::size_t i = 0; i < steps.size(); ++i) {
        const bool fused =
            !parts.back().empty() && fusesIntoRes(program, parts.back().back(), steps[i]);
        if (!fused && ops == kBudget) {
          parts.emplace_back();
          ops = 0;
        }
        if (!fused) ++ops;
        parts.back().push_back(steps[i]);
      }
      for (std::size_t k = 0; k + 1 < parts.size(); ++k) {
        const int semaphore = static_cast<int>(program.semaphores.size());
        program.semaphores.push_back(0);
        Step nop, release, acquire;
        release.op = OpKind::semRelease;
        acquire.op = OpKind::semAcquire;
        release.channel = acquire.channel = semaphore;
        parts[k].push_back(nop);
        parts[k].push_back(release);
        parts[k + 1].insert(parts[k + 1].begin(), {acquire, nop});
      }
      program.threadblocks[t].steps = std::move(parts[0]);
      for (std::size_t k = 1; k < parts.size(); ++k) {
        Threadblock next;
        next.id = static_cast<int>(program.threadblocks.size());
        next.steps = std::move(parts[k]);
        program.threadblocks.push_back(std::move(next));
      }
    }
  }
}

class Writer {
 public:
  explicit Writer(const Algorithm& plan) : a_(plan) {}

  std::string write() {
    bool packets = false;
    for (const RankProgram& program : a_.ranks)
      for (const Threadblock& tb : program.threadblocks)
        for (const Step& s : tb.steps)
          packets = packets || s.srcPackets || s.dstPackets;
    Json plan;
    plan["name"] = a_.name;
    plan["collective"] = a_.collective == CollectiveKind::custom
                             ? a_.customName
                             : std::string(collectiveName(a_.collective));
    plan["protocol"] = packets ? "LL" : "Simple";
    plan["inplace"] = a_.inPlace;
    plan["reuse_resources"] = false;
    Json gpus = Json::array();
    for (const RankProgram& program : a_.ranks)
      gpus.push_back(gpu(program));
    plan["gpus"] = std::move(gpus);
    plan["num_threads_per_block"] = 1024;
    // LL plans alternate scratch halves between launches, so that a packet of this launch is
    // never mistaken for the last one's (MSCCL++'s own LL plans do the same).
    plan["use_double_scratch_buffer"] = packets;
    plan["buffer_alignment"] = 16;
    plan["min_message_size"] = a_.minBytes;
    plan["max_message_size"] = a_.maxBytes == 0 ? UINT64_MAX : a_.maxBytes;
    return plan.dump(2);
  }

 private:
  [[noreturn]] void limit(int rank, int tb, const std::string& what) const {
    throw FormatLimitError(fmt::format(
        "plan '{}' cannot be written as MSCCL++ JSON: rank {} tb {} {} (MSCCL++'s executor, "
        "execution_common.hpp at 1f5f065); split the work over more threadblocks",
        a_.name, rank, tb, what));
  }

  // Per rank: the rank-wide index of each channel within its type, the remote buffers
  // (owner, buffer) it accesses and with which channel types.
  struct RankTables {
    std::vector<int> typeIndex;
    std::map<std::pair<int, BufferKind>, int> remoteIds;
    std::vector<std::pair<int, BufferKind>> remotes;
    std::vector<std::array<bool, 2>> access;  // per remote: memory, port
  };
  // Per threadblock: its channel list and remote-buffer list per type, tb-local index by value.
  struct TbTables {
    std::array<std::vector<int>, 2> channels;
    std::array<std::vector<int>, 2> remotes;
    static int localIndex(std::vector<int>& list, int value) {
      auto it = std::find(list.begin(), list.end(), value);
      if (it != list.end()) return static_cast<int>(it - list.begin());
      list.push_back(value);
      return static_cast<int>(list.size()) - 1;
    }
  };

  static Json local(BufferKind buffer, int index, int count) {
    Json entry;
    entry["type"] = bufferLetter(buffer);
    entry["index"] = index;
    entry["size"] = count;
    return entry;
  }

  Json gpu(const RankProgram& program) {
    RankTables tables;
    std::array<int, 2> perType = {0, 0};
    for (const Channel& c : program.channels)
      tables.typeIndex.push_back(perType[c.type == ChannelType::port ? 1 : 0]++);
    for (const Threadblock& tb : program.threadblocks)
      for (const Step& s : tb.steps) {
        const RemoteOperand remote = opRemoteOperand(s.op);
        if (remote == RemoteOperand::none) continue;
        const BufferKind buffer = remote == RemoteOperand::src ? s.srcBuffer : s.dstBuffer;
        auto [it, added] =
            tables.remoteIds.try_emplace({s.peer, buffer}, static_cast<int>(tables.remotes.size()));
        if (added) {
          tables.remotes.push_back({s.peer, buffer});
          tables.access.push_back({false, false});
        }
        tables.access[static_cast<std::size_t>(it->second)][typeOf(program, s)] = true;
      }
    Json out;
    out["id"] = program.rank;
    out["input_chunks"] = program.inputChunks > 0 ? program.inputChunks : program.outputChunks;
    // The executor divides by output_chunks: an in-place plan's output is its input.
    out["output_chunks"] = program.outputChunks > 0 ? program.outputChunks : program.inputChunks;
    out["scratch_chunks"] = program.scratchChunks;
    Json tbs = Json::array();
    for (const Threadblock& tb : program.threadblocks)
      tbs.push_back(threadblock(program, tables, tb));
    out["threadblocks"] = std::move(tbs);
    Json channels = Json::array();
    for (int type = 0; type < 2; ++type) {
      Json peers = Json::array();
      for (const Channel& c : program.channels)
        if ((c.type == ChannelType::port ? 1 : 0) == type) peers.push_back(c.peer);
      if (peers.empty()) continue;
      Json entry;
      entry["channel_type"] = type == 0 ? "memory" : "port";
      entry["connected_to"] = std::move(peers);
      channels.push_back(std::move(entry));
    }
    out["channels"] = std::move(channels);
    Json remotes = Json::array();
    for (std::size_t i = 0; i < tables.remotes.size(); ++i) {
      Json entry;
      entry["rank"] = tables.remotes[i].first;
      entry["type"] = bufferLetter(tables.remotes[i].second);
      Json access = Json::array();
      if (tables.access[i][0]) access.push_back("memory");
      if (tables.access[i][1]) access.push_back("port");
      entry["access_channel_types"] = std::move(access);
      remotes.push_back(std::move(entry));
    }
    out["remote_buffers"] = std::move(remotes);
    Json semaphores = Json::array();
    for (int init : program.semaphores) {
      Json entry;
      entry["init_value"] = init;
      semaphores.push_back(std::move(entry));
    }
    out["semaphores"] = std::move(semaphores);
    return out;
  }

  Json threadblock(const RankProgram& program, RankTables& ranks, const Threadblock& tb) {
    TbTables tables;
    Json ops = Json::array();
    for (std::size_t i = 0; i < tb.steps.size(); ++i) {
      Json next = op(program, ranks, tables, tb.id, tb.steps[i]);
      if (i + 1 < tb.steps.size() && fusesIntoRes(program, tb.steps[i], tb.steps[i + 1])) {
        // re + put of its result = res (one loop: each element reduced, then stored remotely).
        Json put = op(program, ranks, tables, tb.id, tb.steps[++i]);
        next["name"] = "res";
        next["dst_buff"].push_back(put["dst_buff"][0]);
        next["channel_type"] = "memory";
      }
      ops.push_back(std::move(next));
    }
    if (ops.size() > kMaxOperations)
      limit(program.rank, tb.id,
            fmt::format("has {} operations, and a threadblock runs at most {}", ops.size(),
                        kMaxOperations));
    Json out;
    out["id"] = tb.id;
    out["ops"] = std::move(ops);
    Json channels = Json::array();
    Json refs = Json::array();
    for (int type = 0; type < 2; ++type) {
      const char* name = type == 0 ? "memory" : "port";
      if (tables.channels[type].size() > kMaxChannels)
        limit(program.rank, tb.id,
              fmt::format("uses {} {} channels, and a threadblock holds at most {}",
                          tables.channels[type].size(), name, kMaxChannels));
      if (tables.remotes[type].size() > kMaxRemoteBuffers)
        limit(program.rank, tb.id,
              fmt::format("accesses {} remote buffers through {} channels, and a threadblock "
                          "holds at most {}",
                          tables.remotes[type].size(), name, kMaxRemoteBuffers));
      if (!tables.channels[type].empty()) {
        Json entry;
        entry["channel_type"] = name;
        entry["channel_ids"] = tables.channels[type];
        channels.push_back(std::move(entry));
      }
      if (!tables.remotes[type].empty()) {
        Json entry;
        entry["access_channel_type"] = name;
        entry["remote_buffer_ids"] = tables.remotes[type];
        refs.push_back(std::move(entry));
      }
    }
    out["channels"] = std::move(channels);
    out["remote_buffer_refs"] = std::move(refs);
    return out;
  }

  Json op(const RankProgram& program, RankTables& ranks, TbTables& tables, int tb, const Step& s) {
    Json out;
    const int type = typeOf(program, s);
    const char* typeName = type == 0 ? "memory" : "port";
    auto channelIds = [&] {
      return Json::array({TbTables::localIndex(
          tables.channels[type], ranks.typeIndex[static_cast<std::size_t>(s.channel)])});
    };
    auto remote = [&](BufferKind buffer, int index) {
      Json entry;
      entry["buffer_id"] =
          TbTables::localIndex(tables.remotes[type], ranks.remoteIds.at({s.peer, buffer}));
      entry["index"] = index;
      entry["size"] = s.count;
      return entry;
    };
    const Json src = local(s.srcBuffer, s.srcIndex, s.count);
    const Json dst = local(s.dstBuffer, s.dstIndex, s.count);
    auto packetsFromScratch = [&] {
      if (s.srcBuffer != BufferKind::scratch)
        limit(program.rank, tb,
              fmt::format("reads the packets of {}[{}], and MSCCL++ reads packet sources from "
                          "scratch only",
                          bufferName(s.srcBuffer), s.srcIndex));
    };
    switch (s.op) {
      case OpKind::nop:
        out["name"] = "nop";
        break;
      case OpKind::barrier:
        if (s.channel >= kMaxBarriers)
          limit(program.rank, tb,
                fmt::format("uses barrier {}, and the executor has {}", s.channel, kMaxBarriers));
        out["name"] = "barrier";
        out["barrier_id"] = s.channel;
        out["num_threadblocks"] = s.count;
        break;
      case OpKind::semAcquire:
      case OpKind::semRelease:
        out["name"] = s.op == OpKind::semAcquire ? "sem_acquire" : "sem_release";
        out["semaphore_ids"] = Json::array({s.channel});
        break;
      case OpKind::signal:
      case OpKind::wait:
      case OpKind::relaxedSignal:
      case OpKind::relaxedWait:
      case OpKind::flush: {
        static const std::map<OpKind, const char*> names = {{OpKind::signal, "signal"},
                                                            {OpKind::wait, "wait"},
                                                            {OpKind::relaxedSignal, "rlxsignal"},
                                                            {OpKind::relaxedWait, "rlxwait"},
                                                            {OpKind::flush, "flush"}};
        out["name"] = names.at(s.op);
        out["channel_type"] = typeName;
        out["channel_ids"] = channelIds();
        break;
      }
      case OpKind::copy:
        if (s.srcPackets) packetsFromScratch();
        out["name"] = s.dstPackets ? "cpkt" : s.srcPackets ? "upkt" : "copy";
        out["src_buff"] = Json::array({src});
        out["dst_buff"] = Json::array({dst});
        break;
      case OpKind::reduce:
        if (s.srcPackets) packetsFromScratch();
        out["name"] = s.srcPackets ? "repkt" : "re";
        out["src_buff"] = Json::array({dst, src});
        out["dst_buff"] = Json::array({dst});
        out["reduce_op"] = "sum";
        break;
      case OpKind::put: {
        const char* name = "put";
        if (s.srcPackets && !s.rawPackets) {
          packetsFromScratch();
          name = "rppkt";
        } else if (s.dstPackets) {
          name = "ppkt";
        }
        out["name"] = name;
        out["src_buff"] = Json::array({src});
        out["dst_buff"] = Json::array({remote(s.dstBuffer, s.dstIndex)});
        out["channel_type"] = typeName;
        if (s.channel >= 0 && type == 1) out["channel_ids"] = channelIds();
        break;
      }
      case OpKind::get:
        out["name"] = "get";
        out["src_buff"] = Json::array({remote(s.srcBuffer, s.srcIndex)});
        out["dst_buff"] = Json::array({dst});
        out["channel_type"] = typeName;
        break;
      case OpKind::getReduce:
        out["name"] = "rre";
        out["src_buff"] = Json::array({dst, remote(s.srcBuffer, s.srcIndex)});
        out["dst_buff"] = Json::array({dst});
        out["channel_type"] = typeName;
        out["reduce_op"] = "sum";
        break;
      default:
        // Two-sided ops were lowered before (writeMscclppPlan).
        throw PlanError(
            fmt::format("plan '{}': rank {} tb {} has a two-sided {} in a one-sided "
                        "plan; 'chorus verify' reports it",
                        a_.name, program.rank, tb, opName(s.op)));
    }
    return out;
  }

  const Algorithm& a_;
};

}  // namespace chorus::ir::mscclpp_writer

namespace chorus::ir {

std::string writeMscclppPlan(const Algorithm& algorithm) {
  Algorithm oneSided = lowerToOneSided(algorithm);
  mscclpp_writer::splitLongThreadblocks(oneSided);
  return mscclpp_writer::Writer(oneSided).write();
}

}  // namespace chorus::ir
