#include "ir/mscclpp_plan.h"

#include <algorithm>
#include <array>
#include <climits>
#include <cstdint>
#include <numeric>
#include <optional>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ir/mscclpp_pipelines.h"
#include "support/error.h"

// Field names, defaults and op semantics follow MSCCL++'s executor at commit 1f5f065
// (src/core/executor/execution_plan.cc: parsing; src/core/include/execution_kernel.hpp: what
// each op does). Not a copy of its code: a reading of it, cited where a rule comes from.
namespace chorus::ir::mscclpp_reader {

using nlohmann::json;

// The per-type channel lists of one rank: rank-wide index k of a type -> RankProgram::channels.
struct ChannelLists {
  std::array<std::vector<int>, 2> unified;  // [memory, port]
};

struct RemoteBuffer {
  int rank = 0;
  BufferKind buffer = BufferKind::input;
};

// What one threadblock's per-type tables map tb-local indices to.
struct TbTables {
  std::array<std::vector<int>, 2> channels;       // tb-local -> rank-wide per-type index
  std::array<std::vector<int>, 2> remoteBuffers;  // tb-local -> GPU-wide remote buffer id
};

// One resolved src_buff/dst_buff entry, in chunks already scaled and sliced.
struct Operand {
  bool remote = false;
  int peer = -1;
  BufferKind buffer = BufferKind::input;
  int index = 0;
  int size = 0;
  friend bool operator==(const Operand&, const Operand&) = default;
};

struct Counts {
  int input = 0, output = 0, scratch = 0;
  int of(BufferKind buffer) const {
    return buffer == BufferKind::input ? input : buffer == BufferKind::output ? output : scratch;
  }
};

constexpr std::string_view kSwitchOps[] = {"glres", "gstore", "gstorepkt", "glre"};
constexpr std::string_view kPacketOps[] = {"cpkt",  "upkt",   "ppkt",   "rppkt",
                                           "repkt", "respkt", "recpkt", "recspkt"};
constexpr std::string_view kKnownOps =
    "nop, barrier, copy, put, pws, pwsf, get, re, res, rre, rres, signal, wait, rlxsignal, "
    "rlxwait, flush, sem_acquire, sem_release, and the LL packet ops cpkt, upkt, ppkt, rppkt, "
    "repkt, respkt, recpkt, recspkt";

class Reader {
 public:
  explicit Reader(std::string sourceName) : source_(std::move(sourceName)) {}

  Algorithm read(std::string_view text);

 private:
  [[noreturn]] void fail(const std::string& path, const std::string& what) const {
    throw ParseError(fmt::format("{}: MSCCL++ execution plan: {}: {}", source_, path, what));
  }
  const json& field(const json& object, const char* key, const std::string& path) const {
    if (!object.is_object()) fail(path, "expected a JSON object");
    auto it = object.find(key);
    if (it == object.end()) fail(path, fmt::format("missing \"{}\"", key));
    return *it;
  }
  const json& array(const json& object, const char* key, const std::string& path) const {
    const json& value = field(object, key, path);
    if (!value.is_array()) fail(path + "." + key, "expected an array");
    return value;
  }
  long long integer(const json& value, const std::string& path, long long min,
                    long long max) const {
    if (!value.is_number_integer())
      fail(path, fmt::format("expected an integer, got {}", value.dump()));
    const long long v = value.get<long long>();
    if (v < min || v > max) fail(path, fmt::format("{} is out of range {}..{}", v, min, max));
    return v;
  }
  int intField(const json& object, const char* key, const std::string& path, long long min,
               long long max) const {
    return static_cast<int>(integer(field(object, key, path), path + "." + key, min, max));
  }
  std::string stringField(const json& object, const char* key, const std::string& path) const {
    const json& value = field(object, key, path);
    if (!value.is_string()) fail(path + "." + key, "expected a string");
    return value.get<std::string>();
  }
  BufferKind bufferType(const json& value, const std::string& path) const {
    if (value.is_string()) {
      const std::string s = value.get<std::string>();
      if (s == "i") return BufferKind::input;
      if (s == "o") return BufferKind::output;
      if (s == "s") return BufferKind::scratch;
    }
    fail(path, fmt::format("buffer type {} is not \"i\", \"o\" or \"s\"", value.dump()));
  }
  // "memory" -> 0, "port" -> 1; a switch channel is NVLS, which chorus refuses.
  int channelType(const json& value, const std::string& path) const {
    const std::string s = value.is_string() ? value.get<std::string>() : value.dump();
    if (s == "memory") return 0;
    if (s == "port") return 1;
    if (s == "switch")
      fail(path,
           "a switch channel (NVLink SHARP multicast, NVLS) needs NVLS hardware, which "
           "chorus neither models nor runs; use a plan built without SwitchChannel");
    fail(path, fmt::format("channel type {} is not \"memory\" or \"port\"", s));
  }

  void readGpu(const json& gpu, int rank, const std::string& path);
  void readThreadblock(const json& tb, int rank, int position, const std::string& path);
  void readOp(const json& op, int rank, const TbTables& tables, Threadblock& out,
              const std::string& path);
  void readPipeline(const json& op, int rank, const TbTables& tables, Threadblock& out,
                    const std::string& path, const std::string& where);
  Operand operand(const json& entry, int rank, int channelKind, const TbTables& tables,
                  std::pair<int, int> group, const std::string& path) const;
  std::vector<Operand> operands(const json& op, const char* key, int rank, int channelKind,
                                const TbTables& tables, std::pair<int, int> group,
                                const std::string& path) const;
  int channelOf(const json& op, int rank, int channelKind, const TbTables& tables, std::size_t i,
                const std::string& path) const;

  std::string source_;
  Algorithm algorithm_;
  int scale_ = 1;               // chunk scale: lcm of the thread-block group sizes
  std::vector<Counts> counts_;  // per rank, scaled
  std::vector<ChannelLists> channelLists_;
  std::vector<std::vector<RemoteBuffer>> remoteBuffers_;  // per rank, GPU-wide ids
  std::vector<PipelineLoop> loops_;                       // every pipeline op, in reading order
  PipelineTags tags_;                                     // where each step came from
  int loop_ = -1;                                         // the pipeline whose body is being read
};

// The lcm of every tbg_size in the plan (1 without groups); refuses more than 64.
int groupScale(const json& gpus) {
  long long scale = 1;
  for (const json& gpu : gpus) {
    if (!gpu.is_object() || !gpu.contains("threadblocks")) continue;
    for (const json& tb : gpu["threadblocks"]) {
      if (!tb.is_object() || !tb.contains("ops") || !tb["ops"].is_array()) continue;
      for (const json& op : tb["ops"]) {
        if (!op.is_object() || !op.contains("tbg_info")) continue;
        const json& info = op["tbg_info"];
        if (!info.is_object() || !info.contains("tbg_size") ||
            !info["tbg_size"].is_number_integer())
          continue;
        const long long size = info["tbg_size"].get<long long>();
        if (size >= 1 && size <= 64) scale = std::lcm(scale, size);
        if (scale > 64) return 65;
      }
    }
  }
  return static_cast<int>(scale);
}

Algorithm Reader::read(std::string_view text) {
  json plan;
  try {
    plan = json::parse(text);
  } catch (const json::exception& error) {
    throw ParseError(fmt::format("{}: malformed JSON: {}", source_, error.what()));
  }
  const std::string top = "plan";
  algorithm_.name = stringField(plan, "name", top);
  const std::string collective = stringField(plan, "collective", top);
  if (auto kind = parseCollectiveName(collective); kind && *kind != CollectiveKind::custom) {
    algorithm_.collective = *kind;
  } else {
    algorithm_.collective = CollectiveKind::custom;
    algorithm_.customName = collective;
  }
  const std::string protocol = stringField(plan, "protocol", top);
  algorithm_.protocol = protocol == "LL" ? Protocol::ll : Protocol::simple;
  const json& inplace = field(plan, "inplace", top);
  if (!inplace.is_boolean()) fail("plan.inplace", "expected true or false");
  algorithm_.inPlace = inplace.get<bool>();
  if (plan.contains("min_message_size"))
    algorithm_.minBytes = static_cast<std::uint64_t>(
        integer(plan["min_message_size"], "plan.min_message_size", 0, LLONG_MAX));
  if (plan.contains("max_message_size") && plan["max_message_size"].is_number_unsigned()) {
    const std::uint64_t max = plan["max_message_size"].get<std::uint64_t>();
    algorithm_.maxBytes = max == UINT64_MAX ? 0 : max;  // MSCCL++'s "no limit"
  }
  const json& gpus = array(plan, "gpus", top);
  if (gpus.empty()) fail("plan.gpus", "no GPUs: a plan has one entry per rank");
  algorithm_.nranks = static_cast<int>(gpus.size());
  scale_ = groupScale(gpus);
  if (scale_ > 64)
    fail("plan.gpus",
         "the thread-block group sizes (tbg_info.tbg_size) have a least common "
         "multiple above 64; chorus cuts chunks into at most 64 slices");

  // Chunk counts, channels and remote buffers of every rank first: ops index the peers'.
  counts_.resize(gpus.size());
  channelLists_.resize(gpus.size());
  remoteBuffers_.resize(gpus.size());
  algorithm_.ranks.resize(gpus.size());
  int chunksPerLoop = 0;
  for (std::size_t r = 0; r < gpus.size(); ++r) {
    const std::string path = fmt::format("plan.gpus[{}]", r);
    const json& gpu = gpus[r];
    // The executor takes gpus[rank] by position and checks its id (execution_plan.cc:257).
    if (intField(gpu, "id", path, 0, INT_MAX) != static_cast<int>(r))
      fail(path + ".id", fmt::format("is {}, but this entry is at position {}; gpus[r] must "
                                     "describe rank r",
                                     gpu["id"].get<long long>(), r));
    constexpr long long kMaxChunks = 1 << 20;
    Counts& c = counts_[r];
    c.input = intField(gpu, "input_chunks", path, 0, kMaxChunks) * scale_;
    c.output = intField(gpu, "output_chunks", path, 0, kMaxChunks) * scale_;
    c.scratch = intField(gpu, "scratch_chunks", path, 0, kMaxChunks) * scale_;
    chunksPerLoop = std::max({chunksPerLoop, c.input, c.output});
    RankProgram& program = algorithm_.ranks[r];
    program.rank = static_cast<int>(r);
    program.inputChunks = c.input;
    program.outputChunks = c.output;
    program.scratchChunks = c.scratch;
    const json& channels = array(gpu, "channels", path);
    // Memory channels first, then port channels: each keeps its own rank-wide numbering
    // (executor.cc:404-416).
    for (int kind = 0; kind < 2; ++kind) {
      for (std::size_t i = 0; i < channels.size(); ++i) {
        const std::string cpath = fmt::format("{}.channels[{}]", path, i);
        const json& type = field(channels[i], "channel_type", cpath);
        if (type == "none") continue;
        if (channelType(type, cpath + ".channel_type") != kind) continue;
        const json& peers = array(channels[i], "connected_to", cpath);
        for (std::size_t p = 0; p < peers.size(); ++p) {
          const int peer = static_cast<int>(integer(
              peers[p], fmt::format("{}.connected_to[{}]", cpath, p), 0, algorithm_.nranks - 1));
          if (peer == static_cast<int>(r))
            fail(fmt::format("{}.connected_to[{}]", cpath, p),
                 "a channel connects two different ranks; this one names its own rank");
          channelLists_[r].unified[kind].push_back(static_cast<int>(program.channels.size()));
          program.channels.push_back({kind == 0 ? ChannelType::memory : ChannelType::port, peer});
        }
      }
    }
    const json& remotes = array(gpu, "remote_buffers", path);
    for (std::size_t i = 0; i < remotes.size(); ++i) {
      const std::string bpath = fmt::format("{}.remote_buffers[{}]", path, i);
      const int owner = intField(remotes[i], "rank", bpath, 0, algorithm_.nranks - 1);
      remoteBuffers_[r].push_back(
          {owner, bufferType(field(remotes[i], "type", bpath), bpath + ".type")});
    }
    if (gpu.contains("semaphores")) {
      const json& semaphores = array(gpu, "semaphores", path);
      for (std::size_t i = 0; i < semaphores.size(); ++i)
        program.semaphores.push_back(intField(
            semaphores[i], "init_value", fmt::format("{}.semaphores[{}]", path, i), 0, 1 << 20));
    }
  }
  algorithm_.chunksPerLoop = chunksPerLoop;
  tags_.resize(gpus.size());
  for (std::size_t r = 0; r < gpus.size(); ++r)
    readGpu(gpus[r], static_cast<int>(r), fmt::format("plan.gpus[{}]", r));
  if (auto problem = findPipelineProblem(algorithm_, loops_, tags_))
    fail(problem->path, problem->message);
  return std::move(algorithm_);
}

void Reader::readGpu(const json& gpu, int rank, const std::string& path) {
  const json& tbs = array(gpu, "threadblocks", path);
  for (std::size_t t = 0; t < tbs.size(); ++t)
    readThreadblock(tbs[t], rank, static_cast<int>(t), fmt::format("{}.threadblocks[{}]", path, t));
}

void Reader::readThreadblock(const json& tb, int rank, int position, const std::string& path) {
  // Ops are stored by position and channel tables by id (execution_plan.cc:404-474): the two
  // must agree for the plan to mean what it says.
  if (intField(tb, "id", path, 0, INT_MAX) != position)
    fail(path + ".id", fmt::format("is {}, but this threadblock is at position {}; MSCCL++'s "
                                   "executor needs ids equal to positions",
                                   tb["id"].get<long long>(), position));
  TbTables tables;
  const json& channels = array(tb, "channels", path);
  for (std::size_t i = 0; i < channels.size(); ++i) {
    const std::string cpath = fmt::format("{}.channels[{}]", path, i);
    const json& type = field(channels[i], "channel_type", cpath);
    if (type == "none") continue;
    const int kind = channelType(type, cpath + ".channel_type");
    const json& ids = array(channels[i], "channel_ids", cpath);
    const auto& rankWide = channelLists_[rank].unified[kind];
    for (std::size_t j = 0; j < ids.size(); ++j)
      tables.channels[kind].push_back(
          static_cast<int>(integer(ids[j], fmt::format("{}.channel_ids[{}]", cpath, j), 0,
                                   static_cast<long long>(rankWide.size()) - 1)));
  }
  if (tb.contains("remote_buffer_refs")) {
    const json& refs = array(tb, "remote_buffer_refs", path);
    for (std::size_t i = 0; i < refs.size(); ++i) {
      const std::string rpath = fmt::format("{}.remote_buffer_refs[{}]", path, i);
      const int kind =
          channelType(field(refs[i], "access_channel_type", rpath), rpath + ".access_channel_type");
      const json& ids = array(refs[i], "remote_buffer_ids", rpath);
      for (std::size_t j = 0; j < ids.size(); ++j)
        tables.remoteBuffers[kind].push_back(
            static_cast<int>(integer(ids[j], fmt::format("{}.remote_buffer_ids[{}]", rpath, j), 0,
                                     static_cast<long long>(remoteBuffers_[rank].size()) - 1)));
    }
  }
  Threadblock out;
  out.id = position;
  const json& ops = array(tb, "ops", path);
  tags_[rank].emplace_back();
  for (std::size_t i = 0; i < ops.size(); ++i) {
    readOp(ops[i], rank, tables, out, fmt::format("{}.ops[{}]", path, i));
    tags_[rank].back().resize(out.steps.size());  // outside pipelines (loop -1)
  }
  algorithm_.ranks[rank].threadblocks.push_back(std::move(out));
}

Operand Reader::operand(const json& entry, int rank, int channelKind, const TbTables& tables,
                        std::pair<int, int> group, const std::string& path) const {
  Operand o;
  if (entry.contains("switch_channel_id"))
    fail(path,
         "a switch-channel operand is NVLS multicast memory, which chorus neither models "
         "nor runs");
  if (entry.contains("buffer_id")) {
    // A remote buffer through the op's channel type (execution_plan.cc:493-501).
    if (channelKind < 0)
      fail(path,
           "names a remote buffer (buffer_id), but the op has no \"channel_type\" that "
           "says which of the threadblock's remote buffer lists it indexes");
    const auto& list = tables.remoteBuffers[channelKind];
    const int ref = static_cast<int>(integer(entry["buffer_id"], path + ".buffer_id", 0,
                                             static_cast<long long>(list.size()) - 1));
    const RemoteBuffer& remote = remoteBuffers_[rank][list[ref]];
    if (remote.rank == rank)
      fail(path, "names a remote buffer of its own rank; use a local operand (\"type\")");
    o.remote = true;
    o.peer = remote.rank;
    o.buffer = remote.buffer;
  } else {
    o.peer = rank;
    o.buffer = bufferType(field(entry, "type", path), path + ".type");
  }
  const Counts& counts = counts_[o.peer];
  const int limit = counts.of(o.buffer) / scale_;
  const int index = intField(entry, "index", path, 0, INT_MAX);
  const int size = intField(entry, "size", path, 1, INT_MAX);
  if (static_cast<long long>(index) + size > limit)
    fail(path, fmt::format("chunks {}..{} lie outside {} buffer '{}' of rank {} ({} chunks)", index,
                           index + size, o.remote ? "remote" : "local", bufferName(o.buffer),
                           o.peer, limit));
  // Scale to whole slices, then take this threadblock's slice of the group (§ tbg_info).
  const auto [member, groupSize] = group;
  o.size = size * scale_ / groupSize;
  o.index = index * scale_ + member * o.size;
  return o;
}

std::vector<Operand> Reader::operands(const json& op, const char* key, int rank, int channelKind,
                                      const TbTables& tables, std::pair<int, int> group,
                                      const std::string& path) const {
  std::vector<Operand> out;
  if (!op.contains(key)) return out;
  const json& list = op[key];
  if (!list.is_array()) fail(path + "." + key, "expected an array");
  for (std::size_t i = 0; i < list.size(); ++i)
    out.push_back(
        operand(list[i], rank, channelKind, tables, group, fmt::format("{}.{}[{}]", path, key, i)));
  return out;
}

int Reader::channelOf(const json& op, int rank, int channelKind, const TbTables& tables,
                      std::size_t i, const std::string& path) const {
  if (!op.contains("channel_ids") || !op["channel_ids"].is_array() || op["channel_ids"].size() <= i)
    fail(path, fmt::format("needs channel_ids[{}] (one channel per entry)", i));
  const auto& list = tables.channels[channelKind];
  const int local =
      static_cast<int>(integer(op["channel_ids"][i], fmt::format("{}.channel_ids[{}]", path, i), 0,
                               static_cast<long long>(list.size()) - 1));
  return channelLists_[rank].unified[channelKind][list[local]];
}

// A pipeline's body, read once over whole chunks; findPipelineProblem then checks that this is
// what MSCCL++'s unit-by-unit iterations compute (mscclpp_pipelines.h).
void Reader::readPipeline(const json& op, int rank, const TbTables& tables, Threadblock& out,
                          const std::string& path, const std::string& where) {
  if (loop_ >= 0)
    fail(where,
         "a pipeline inside a pipeline: MSCCL++'s executor runs one level of pipelines (its DSL "
         "refuses nested LoopIterationContexts); flatten the inner one");
  const json& context = field(op, "iter_context", path);
  PipelineLoop loop;
  loop.path = path;
  loop.unitBytes = integer(field(context, "unit_size", path + ".iter_context"),
                           path + ".iter_context.unit_size", 1, UINT32_MAX);
  loop.numChunks = intField(context, "num_chunks", path + ".iter_context", 1, 1 << 20);
  const Counts& counts = counts_[static_cast<std::size_t>(rank)];
  loop.chunkBasis = (counts.input != 0 ? counts.input : counts.output) / scale_;
  loop.scale = scale_;
  const json& body = array(op, "ops", path);
  loops_.push_back(loop);
  loop_ = static_cast<int>(loops_.size()) - 1;
  for (std::size_t j = 0; j < body.size(); ++j) {
    const std::string bodyPath = fmt::format("{}.ops[{}]", path, j);
    const std::string name = stringField(body[j], "name", bodyPath);
    const std::string bodyWhere = fmt::format("{} ({})", bodyPath, name);
    if (name == "barrier")
      fail(bodyWhere,
           "a barrier in a pipeline body joins its threadblocks once per iteration, which "
           "chorus does not model (it reads a pipeline's body once); move the barrier out of "
           "the loop or order the threadblocks with semaphores");
    if (std::find(std::begin(kPacketOps), std::end(kPacketOps), name) != std::end(kPacketOps))
      fail(bodyWhere,
           "an LL packet op in a pipeline body: MSCCL++'s packet ops ignore the iteration's "
           "offset (execution_kernel.hpp) and move their whole operands in every iteration, "
           "which chorus does not model; move it out of the loop");
    if (body[j].is_object() && body[j].contains("tbg_info") &&
        intField(body[j]["tbg_info"], "tbg_size", bodyPath + ".tbg_info", 1, 64) > 1)
      fail(bodyWhere,
           "a thread-block group op in a pipeline body: each member's slice is smaller than "
           "the num_chunks chunks MSCCL++ iterates over, so its executor runs past the slice; "
           "move it out of the loop");
    readOp(body[j], rank, tables, out, bodyPath);
    tags_[rank].back().resize(out.steps.size(), PipelineTag{loop_, static_cast<int>(j)});
  }
  loop_ = -1;
}

void Reader::readOp(const json& op, int rank, const TbTables& tables, Threadblock& out,
                    const std::string& path) {
  const std::string name = stringField(op, "name", path);
  const std::string where = fmt::format("{} ({})", path, name);
  if (std::find(std::begin(kSwitchOps), std::end(kSwitchOps), name) != std::end(kSwitchOps))
    fail(where,
         "NVLS switch operations need NVLink SHARP multicast hardware, which chorus "
         "neither models nor runs");
  if (name == "pipeline") {
    readPipeline(op, rank, tables, out, path, where);
    return;
  }
  if (op.contains("reduce_op") && op["reduce_op"] != "sum")
    fail(where, fmt::format("reduce_op {}: MSCCL++'s executor ignores reduce_op and always sums "
                            "(execution_kernel.hpp), so chorus refuses rather than guess which "
                            "the plan means",
                            op["reduce_op"].dump()));
  int channelKind = -1;
  if (op.contains("channel_type") && op["channel_type"] != "none")
    channelKind = channelType(op["channel_type"], path + ".channel_type");
  std::pair<int, int> group{0, 1};
  if (op.contains("tbg_info")) {
    const json& info = op["tbg_info"];
    const int size = intField(info, "tbg_size", path + ".tbg_info", 1, 64);
    group = {intField(info, "tb_id", path + ".tbg_info", 0, size - 1), size};
  }
  const std::vector<Operand> src = operands(op, "src_buff", rank, channelKind, tables, group, path);
  const std::vector<Operand> dst = operands(op, "dst_buff", rank, channelKind, tables, group, path);
  // Packet flags of the next step(s) that `step` emits (Step::srcPackets, dstPackets).
  struct Packets {
    bool src = false, dst = false, raw = false;
  };
  auto step = [&](OpKind kind, const Operand* from, const Operand* to, int peer, int channel,
                  Packets packets = {}) {
    Step s;
    s.srcPackets = packets.src;
    s.dstPackets = packets.dst;
    s.rawPackets = packets.raw;
    s.op = kind;
    s.peer = peer;
    s.channel = channel;
    if (from) {
      s.srcBuffer = from->buffer;
      s.srcIndex = from->index;
      s.count = from->size;
    }
    if (to) {
      s.dstBuffer = to->buffer;
      s.dstIndex = to->index;
      s.count = to->size;
    }
    out.steps.push_back(s);
  };
  auto need = [&](bool ok, const std::string& what) {
    if (!ok) fail(where, what);
  };
  auto local = [](const std::vector<Operand>& list, std::size_t from) {
    for (std::size_t i = from; i < list.size(); ++i)
      if (list[i].remote) return false;
    return true;
  };
  auto remote = [](const std::vector<Operand>& list, std::size_t from) {
    for (std::size_t i = from; i < list.size(); ++i)
      if (!list[i].remote) return false;
    return true;
  };
  auto syncOnChannels = [&](OpKind kind) {
    need(channelKind >= 0, "needs \"channel_type\" \"memory\" or \"port\"");
    need(op.contains("channel_ids") && op["channel_ids"].is_array() && !op["channel_ids"].empty(),
         "needs a non-empty \"channel_ids\"");
    for (std::size_t i = 0; i < op["channel_ids"].size(); ++i) {
      const int channel = channelOf(op, rank, channelKind, tables, i, path);
      step(kind, nullptr, nullptr, algorithm_.ranks[rank].channels[channel].peer, channel);
    }
  };
  auto onSemaphores = [&](OpKind kind) {
    need(op.contains("semaphore_ids") && op["semaphore_ids"].is_array() &&
             !op["semaphore_ids"].empty(),
         "needs a non-empty \"semaphore_ids\"");
    const auto count = static_cast<long long>(algorithm_.ranks[rank].semaphores.size());
    for (std::size_t i = 0; i < op["semaphore_ids"].size(); ++i)
      step(kind, nullptr, nullptr, -1,
           static_cast<int>(integer(op["semaphore_ids"][i],
                                    fmt::format("{}.semaphore_ids[{}]", path, i), 0, count - 1)));
  };
  // The reduce family: dst[0] = src[0] ⊕ src[1..] (getReduce for remote sources), starting from
  // whichever source dst[0] is, so that no source is overwritten before it is read.
  auto reduceInto = [&](bool remoteSources) {
    need(src.size() >= 2 && !dst.empty(), "needs at least two src_buff entries and a dst_buff");
    need(!src[0].remote && !dst[0].remote, "reads src_buff[0] and writes dst_buff[0] locally");
    need(remoteSources ? remote(src, 1) : local(src, 1),
         remoteSources ? "reads src_buff[1..] from peers (buffer_id)"
                       : "reads src_buff[1..] locally (type)");
    const Operand& d = dst[0];
    std::size_t base = src.size();
    for (std::size_t i = 0; i < src.size(); ++i) {
      need(src[i].size == d.size, "needs every src_buff and dst_buff entry of one size");
      if (!src[i].remote && src[i] == d)
        base = i;
      else if (!src[i].remote && src[i].buffer == d.buffer && src[i].index < d.index + d.size &&
               d.index < src[i].index + src[i].size)
        fail(where, "dst_buff[0] overlaps a source without being equal to it");
    }
    if (base == src.size()) {
      base = 0;
      step(OpKind::copy, &src[0], &d, -1, -1);
    }
    for (std::size_t i = 0; i < src.size(); ++i)
      if (i != base)
        step(src[i].remote ? OpKind::getReduce : OpKind::reduce, &src[i], &d,
             src[i].remote ? src[i].peer : -1, -1);
  };
  // Packet sources of upkt, rppkt and the reduce-packet family are read from local scratch
  // whatever their "type" says (execution_kernel.hpp:416-430).
  auto inScratch = [&](const Operand& o) {
    Operand copy = o;
    copy.buffer = BufferKind::scratch;
    need(static_cast<long long>(copy.index) + copy.size <= counts_[rank].scratch,
         fmt::format("reads packets from scratch chunks {}..{} (MSCCL++ reads packet sources "
                     "from scratch whatever their type), but rank {} has {} scratch chunks",
                     copy.index / scale_, (copy.index + copy.size) / scale_, rank,
                     counts_[rank].scratch / scale_));
    return copy;
  };
  auto needChannelTo = [&](int channel, int peer, std::size_t i) {
    need(algorithm_.ranks[rank].channels[channel].peer == peer,
         fmt::format("dst_buff[{}] lies on rank {}, but channel_ids[{}] connects to rank {}", i,
                     peer, i, algorithm_.ranks[rank].channels[channel].peer));
  };
  auto putResult = [&]() {
    need(remote(dst, 1), "writes dst_buff[1..] to peers (buffer_id)");
    for (std::size_t i = 1; i < dst.size(); ++i) {
      need(dst[i].size == dst[0].size, "needs every dst_buff entry of one size");
      step(OpKind::put, &dst[0], &dst[i], dst[i].peer, -1);
    }
  };

  if (name == "nop") {
    step(OpKind::nop, nullptr, nullptr, -1, -1);
  } else if (name == "barrier") {
    const int id = intField(op, "barrier_id", path, 0, 1 << 20);
    const int count = intField(op, "num_threadblocks", path, 1, 1 << 20);
    Step s;
    s.op = OpKind::barrier;
    s.channel = id;
    s.count = count;
    out.steps.push_back(s);
  } else if (name == "signal" || name == "wait" || name == "rlxsignal" || name == "rlxwait" ||
             name == "flush") {
    const OpKind kind = name == "signal"      ? OpKind::signal
                        : name == "wait"      ? OpKind::wait
                        : name == "rlxsignal" ? OpKind::relaxedSignal
                        : name == "rlxwait"   ? OpKind::relaxedWait
                                              : OpKind::flush;
    need(kind != OpKind::flush || channelKind == 1, "flushes port channels only");
    // Relaxed forms are relaxed on memory channels only (semaphore_device.hpp); on a port
    // channel they are the ordinary ones.
    OpKind effective = kind;
    if (channelKind == 1 && kind == OpKind::relaxedSignal) effective = OpKind::signal;
    if (channelKind == 1 && kind == OpKind::relaxedWait) effective = OpKind::wait;
    syncOnChannels(effective);
  } else if (name == "sem_acquire" || name == "sem_release") {
    onSemaphores(name == "sem_acquire" ? OpKind::semAcquire : OpKind::semRelease);
  } else if (name == "copy") {
    need(src.size() == 1 && dst.size() == 1 && local(src, 0) && local(dst, 0),
         "copies one local src_buff entry to one local dst_buff entry");
    need(src[0].size == dst[0].size, "needs src_buff and dst_buff entries of one size");
    step(OpKind::copy, &src[0], &dst[0], -1, -1);
  } else if (name == "put" || name == "pws" || name == "pwsf") {
    need(channelKind >= 0, "needs \"channel_type\" \"memory\" or \"port\"");
    need(!src.empty() && src.size() == dst.size() && local(src, 0) && remote(dst, 0),
         "puts local src_buff entries to as many remote dst_buff entries");
    for (std::size_t i = 0; i < dst.size(); ++i) {
      need(src[i].size == dst[i].size, "needs src_buff[i] and dst_buff[i] of one size");
      // A memory put reads every source from src_buff[0]'s buffer (execution_kernel.hpp:156).
      Operand from = src[i];
      from.buffer = src[0].buffer;
      if (channelKind == 0) {
        step(OpKind::put, &from, &dst[i], dst[i].peer, -1);
        continue;
      }
      const int channel = channelOf(op, rank, channelKind, tables, i, path);
      need(algorithm_.ranks[rank].channels[channel].peer == dst[i].peer,
           fmt::format("dst_buff[{}] lies on rank {}, but channel_ids[{}] connects to rank {}", i,
                       dst[i].peer, i, algorithm_.ranks[rank].channels[channel].peer));
      step(OpKind::put, &from, &dst[i], dst[i].peer, channel);
      if (name != "put") step(OpKind::signal, nullptr, nullptr, dst[i].peer, channel);
      if (name == "pwsf") step(OpKind::flush, nullptr, nullptr, dst[i].peer, channel);
    }
  } else if (name == "get") {
    need(channelKind == 0, "reads peer memory directly: needs \"channel_type\": \"memory\"");
    need(!src.empty() && src.size() == dst.size() && remote(src, 0) && local(dst, 0),
         "gets remote src_buff entries into as many local dst_buff entries");
    for (std::size_t i = 0; i < src.size(); ++i) {
      need(src[i].size == dst[i].size, "needs src_buff[i] and dst_buff[i] of one size");
      step(OpKind::get, &src[i], &dst[i], src[i].peer, -1);
    }
  } else if (name == "re") {
    need(dst.size() == 1, "writes one local dst_buff entry");
    reduceInto(false);
  } else if (name == "res") {
    need(channelKind == 0, "writes peer memory directly: needs \"channel_type\": \"memory\"");
    reduceInto(false);
    putResult();
  } else if (name == "rre") {
    need(channelKind == 0, "reads peer memory directly: needs \"channel_type\": \"memory\"");
    need(dst.size() == 1, "writes one local dst_buff entry");
    reduceInto(true);
  } else if (name == "rres") {
    need(channelKind == 0, "reads peer memory directly: needs \"channel_type\": \"memory\"");
    reduceInto(true);
    putResult();
  } else if (name == "cpkt") {
    need(src.size() == 1 && dst.size() == 1 && local(src, 0) && local(dst, 0),
         "copies one local src_buff entry to the packets of one local dst_buff entry");
    need(src[0].size == dst[0].size, "needs src_buff and dst_buff entries of one size");
    step(OpKind::copy, &src[0], &dst[0], -1, -1, {.dst = true});
  } else if (name == "upkt") {
    need(src.size() == 1 && dst.size() == 1 && local(src, 0) && local(dst, 0),
         "unpacks the packets of one local src_buff entry into one local dst_buff entry");
    need(src[0].size == dst[0].size, "needs src_buff and dst_buff entries of one size");
    const Operand packets = inScratch(src[0]);
    step(OpKind::copy, &packets, &dst[0], -1, -1, {.src = true});
  } else if (name == "ppkt") {
    need(channelKind >= 0, "needs \"channel_type\" \"memory\" or \"port\"");
    need(!src.empty() && src.size() == dst.size() && local(src, 0) && remote(dst, 0),
         "puts local src_buff entries as packets to as many remote dst_buff entries");
    for (std::size_t i = 0; i < dst.size(); ++i) {
      need(src[i].size == dst[i].size, "needs src_buff[i] and dst_buff[i] of one size");
      if (channelKind == 0) {
        // Plain data from src_buff[0]'s buffer, written as packets (execution_kernel.hpp:258).
        Operand from = src[i];
        from.buffer = src[0].buffer;
        step(OpKind::put, &from, &dst[i], dst[i].peer, -1, {.dst = true});
        continue;
      }
      // A port channel's proxy copies packets that are already in the source (:275-289).
      const int channel = channelOf(op, rank, channelKind, tables, i, path);
      needChannelTo(channel, dst[i].peer, i);
      step(OpKind::put, &src[i], &dst[i], dst[i].peer, channel,
           {.src = true, .dst = true, .raw = true});
    }
  } else if (name == "rppkt") {
    need(channelKind >= 0, "needs \"channel_type\" \"memory\" or \"port\"");
    need(src.size() == 1 && !dst.empty() && local(src, 0) && remote(dst, 0),
         "forwards the packets of one local src_buff entry to remote dst_buff entries");
    for (std::size_t i = 0; i < dst.size(); ++i) {
      need(src[0].size == dst[i].size, "needs src_buff[0] and every dst_buff entry of one size");
      int channel = -1;
      if (channelKind == 1) {
        channel = channelOf(op, rank, channelKind, tables, i, path);
        needChannelTo(channel, dst[i].peer, i);
      }
      const Operand packets = inScratch(src[0]);
      step(OpKind::put, &packets, &dst[i], dst[i].peer, channel, {.src = true, .dst = true});
    }
  } else if (name == "repkt" || name == "respkt" || name == "recpkt" || name == "recspkt") {
    // dst_buff[0] = src_buff[0] (plain) ⊕ the packets of src_buff[1..] (always local scratch);
    // recpkt/recspkt also copy the sum as packets to dst_buff[1]; respkt/recspkt put it as
    // packets to the remote dst_buff entries that follow (execution_kernel.hpp:334-414).
    const bool copiesPackets = name == "recpkt" || name == "recspkt";
    const bool sends = name == "respkt" || name == "recspkt";
    const std::size_t localDsts = copiesPackets ? 2 : 1;
    need(!sends || channelKind == 0,
         "writes peer memory directly: needs \"channel_type\": \"memory\"");
    need(src.size() >= 2 && local(src, 0), "needs a plain src_buff[0] and packet sources after it");
    need(dst.size() >= localDsts && !dst[0].remote && (!copiesPackets || !dst[1].remote) &&
             (sends ? dst.size() > localDsts && remote(dst, localDsts) : dst.size() == localDsts),
         copiesPackets ? (sends ? "writes local dst_buff[0..1] and remote dst_buff[2..]"
                                : "writes local dst_buff[0] and dst_buff[1]")
                       : (sends ? "writes local dst_buff[0] and remote dst_buff[1..]"
                                : "writes one local dst_buff entry"));
    const Operand& d = dst[0];
    for (const Operand& o : src)
      need(o.size == d.size, "needs every src_buff and dst_buff entry of one size");
    for (const Operand& o : dst)
      need(o.size == d.size, "needs every src_buff and dst_buff entry of one size");
    if (!(src[0] == d)) {
      need(src[0].buffer != d.buffer || src[0].index >= d.index + d.size ||
               d.index >= src[0].index + src[0].size,
           "dst_buff[0] overlaps src_buff[0] without being equal to it");
      step(OpKind::copy, &src[0], &d, -1, -1);
    }
    for (std::size_t i = 1; i < src.size(); ++i) {
      const Operand packets = inScratch(src[i]);
      step(OpKind::reduce, &packets, &d, -1, -1, {.src = true});
    }
    if (copiesPackets) step(OpKind::copy, &d, &dst[1], -1, -1, {.dst = true});
    for (std::size_t i = localDsts; i < dst.size(); ++i)
      step(OpKind::put, &d, &dst[i], dst[i].peer, -1, {.dst = true});
  } else {
    fail(where, fmt::format("unknown operation; MSCCL++'s executor runs {} (Simple protocol), "
                            "the LL packet ops and the NVLS switch ops",
                            kKnownOps));
  }
}

}  // namespace chorus::ir::mscclpp_reader

namespace chorus::ir {

Algorithm readMscclppPlan(std::string_view text, const std::string& sourceName) {
  return mscclpp_reader::Reader(sourceName).read(text);
}

}  // namespace chorus::ir
