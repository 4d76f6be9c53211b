// MSCCL++ execution plans written by hand for the tests of the one-sided model (the verifier
// in tests/verify, the thread runner in tests/runtime): correct plans that the tests mutate.
#pragma once

#include <algorithm>
#include <vector>

#include <nlohmann/json.hpp>

namespace chorus::testing_support::mscclpp_plans {

using nlohmann::json;

inline json entry(const char* type, int index, int size = 1) {
  return {{"type", type}, {"index", index}, {"size", size}};
}
inline json remoteEntry(int bufferId, int index, int size = 1) {
  return {{"buffer_id", bufferId}, {"index", index}, {"size", size}};
}
inline json syncOp(const char* name, const char* channelType, std::vector<int> ids) {
  return {{"name", name}, {"channel_type", channelType}, {"channel_ids", ids}};
}
inline json nop() {
  return {{"name", "nop"}};
}
inline std::vector<int> upTo(int n) {
  std::vector<int> out;
  for (int i = 0; i < n; ++i)
    out.push_back(i);
  return out;
}

// The ranks of 0..n-1 other than `rank`, in order.
inline std::vector<int> peersOf(int rank, int n) {
  std::vector<int> out;
  for (int p = 0; p < n; ++p)
    if (p != rank) out.push_back(p);
  return out;
}

// Remote buffer entries: buffer `type` ("i", "o", "s") of each peer, reached through
// `channelType` channels.
inline json remoteBuffers(const std::vector<int>& peers, const char* type,
                          const char* channelType) {
  json out = json::array();
  for (int p : peers)
    out.push_back({{"rank", p}, {"type", type}, {"access_channel_types", {channelType}}});
  return out;
}

// GPU `rank` of a plan whose one threadblock runs `ops` over one `channelType` channel to each
// of `peers` and reaches every remote buffer of `gpuRemotes` through them.
inline json oneThreadblockGpu(int rank, int inputChunks, int outputChunks, int scratchChunks,
                              const char* channelType, const std::vector<int>& peers,
                              const json& gpuRemotes, json ops) {
  const int remoteCount = static_cast<int>(gpuRemotes.size());
  json tb = {
      {"id", 0},
      {"channels",
       {{{"channel_type", channelType}, {"channel_ids", upTo(static_cast<int>(peers.size()))}}}},
      {"remote_buffer_refs",
       {{{"access_channel_type", channelType}, {"remote_buffer_ids", upTo(remoteCount)}}}},
      {"ops", std::move(ops)}};
  return {{"id", rank},
          {"input_chunks", inputChunks},
          {"output_chunks", outputChunks},
          {"scratch_chunks", scratchChunks},
          {"channels", {{{"channel_type", channelType}, {"connected_to", peers}}}},
          {"remote_buffers", gpuRemotes},
          {"semaphores", json::array()},
          {"threadblocks", {tb}}};
}

// AllReduce in two phases over memory channels, n ranks, in place, one threadblock per rank:
// rank r puts input chunk p into rank p's scratch[r], signals and waits for everyone, reduces
// its own chunk from scratch, puts the sum into every peer's input[r], signals and waits.
inline json twoPhaseAllReduce(int n) {
  json gpus = json::array();
  for (int r = 0; r < n; ++r) {
    const std::vector<int> peers = peersOf(r, n);
    const int k = n - 1;
    json remotes = remoteBuffers(peers, "s", "memory");
    for (const json& b : remoteBuffers(peers, "i", "memory"))
      remotes.push_back(b);
    json scatterSrc = json::array(), scatterDst = json::array(), reduceSrc = json::array(),
         gatherSrc = json::array(), gatherDst = json::array();
    reduceSrc.push_back(entry("i", r));
    for (int j = 0; j < k; ++j) {
      scatterSrc.push_back(entry("i", peers[j]));
      scatterDst.push_back(remoteEntry(j, r));
      reduceSrc.push_back(entry("s", peers[j]));
      gatherSrc.push_back(entry("i", r));
      gatherDst.push_back(remoteEntry(k + j, r));
    }
    json ops = json::array({{{"name", "put"},
                             {"channel_type", "memory"},
                             {"src_buff", scatterSrc},
                             {"dst_buff", scatterDst}},
                            nop(),
                            syncOp("signal", "memory", upTo(k)),
                            syncOp("wait", "memory", upTo(k)),
                            nop(),
                            {{"name", "re"},
                             {"src_buff", reduceSrc},
                             {"dst_buff", {entry("i", r)}},
                             {"reduce_op", "sum"}},
                            nop(),
                            {{"name", "put"},
                             {"channel_type", "memory"},
                             {"src_buff", gatherSrc},
                             {"dst_buff", gatherDst}},
                            nop(),
                            syncOp("signal", "memory", upTo(k)),
                            syncOp("wait", "memory", upTo(k)),
                            nop()});
    gpus.push_back(oneThreadblockGpu(r, n, n, n, "memory", peers, remotes, std::move(ops)));
  }
  return {{"name", "two_phase"},  {"collective", "allreduce"},
          {"protocol", "Simple"}, {"inplace", true},
          {"gpus", gpus},         {"num_threads_per_block", 1024}};
}

// AllGather over port channels, out of place: rank r copies its input to output[r], then per
// peer a put-with-signal of its input into the peer's output[r], and waits for every peer.
inline json portAllGather(int n) {
  json gpus = json::array();
  for (int r = 0; r < n; ++r) {
    const std::vector<int> peers = peersOf(r, n);
    const int k = n - 1;
    json ops = json::array(
        {{{"name", "copy"}, {"src_buff", {entry("i", 0)}}, {"dst_buff", {entry("o", r)}}}});
    for (int j = 0; j < k; ++j)
      ops.push_back({{"name", "pws"},
                     {"channel_type", "port"},
                     {"channel_ids", {j}},
                     {"src_buff", {entry("i", 0)}},
                     {"dst_buff", {remoteEntry(j, r)}}});
    ops.push_back(syncOp("wait", "port", upTo(k)));
    ops.push_back(nop());
    gpus.push_back(oneThreadblockGpu(r, 1, n, 0, "port", peers, remoteBuffers(peers, "o", "port"),
                                     std::move(ops)));
  }
  return {{"name", "port_allgather"},
          {"collective", "allgather"},
          {"protocol", "Simple"},
          {"inplace", false},
          {"gpus", gpus}};
}

// One rank, two threadblocks: tb 0 copies input to scratch, tb 1 copies scratch to output,
// ordered by semaphore 0 (release after the copy, acquire before) — or, with `barrier`, by a
// barrier both join.
inline json handOff(bool barrier) {
  json first = {{"name", "copy"}, {"src_buff", {entry("i", 0)}}, {"dst_buff", {entry("s", 0)}}};
  json second = {{"name", "copy"}, {"src_buff", {entry("s", 0)}}, {"dst_buff", {entry("o", 0)}}};
  json join = {{"name", "barrier"}, {"barrier_id", 0}, {"num_threadblocks", 2}};
  json tb0 = barrier
                 ? json::array({first, join})
                 : json::array({first, nop(), {{"name", "sem_release"}, {"semaphore_ids", {0}}}});
  json tb1 = barrier
                 ? json::array({join, second})
                 : json::array({{{"name", "sem_acquire"}, {"semaphore_ids", {0}}}, nop(), second});
  json gpu = {{"id", 0},
              {"input_chunks", 1},
              {"output_chunks", 1},
              {"scratch_chunks", 1},
              {"channels", json::array()},
              {"remote_buffers", json::array()},
              {"semaphores", {{{"init_value", 0}}}},
              {"threadblocks",
               {{{"id", 0}, {"channels", json::array()}, {"ops", tb0}},
                {{"id", 1}, {"channels", json::array()}, {"ops", tb1}}}}};
  return {{"name", "hand_off"},
          {"collective", "allreduce"},
          {"protocol", "Simple"},
          {"inplace", false},
          {"gpus", {gpu}}};
}

// AllReduce in LL packets (as MSCCL++'s allreduce_packet.json), n ranks, in place, memory
// channels, no signals: rank r puts its input chunk p as packets into rank p's scratch[r]; then
// sums its own chunk r from those packets and puts the sum as packets into every peer's
// scratch[n + r] (respkt); then unpacks each peer's sum from scratch[n + p] into input[p].
inline json packetAllReduce(int n) {
  json gpus = json::array();
  for (int r = 0; r < n; ++r) {
    const std::vector<int> peers = peersOf(r, n);
    json scatterSrc = json::array(), scatterDst = json::array(), reduceSrc = json::array(),
         reduceDst = json::array();
    reduceSrc.push_back(entry("i", r));
    reduceDst.push_back(entry("i", r));
    for (std::size_t j = 0; j < peers.size(); ++j) {
      scatterSrc.push_back(entry("i", peers[j]));
      scatterDst.push_back(remoteEntry(static_cast<int>(j), r));
      reduceSrc.push_back(entry("s", peers[j]));
      reduceDst.push_back(remoteEntry(static_cast<int>(j), n + r));
    }
    json ops = json::array({{{"name", "ppkt"},
                             {"channel_type", "memory"},
                             {"src_buff", scatterSrc},
                             {"dst_buff", scatterDst}},
                            {{"name", "respkt"},
                             {"channel_type", "memory"},
                             {"src_buff", reduceSrc},
                             {"dst_buff", reduceDst},
                             {"reduce_op", "sum"}}});
    for (int p : peers)
      ops.push_back(
          {{"name", "upkt"}, {"src_buff", {entry("s", n + p)}}, {"dst_buff", {entry("i", p)}}});
    gpus.push_back(oneThreadblockGpu(r, n, 0, 2 * n, "memory", peers,
                                     remoteBuffers(peers, "s", "memory"), std::move(ops)));
  }
  return {{"name", "packet_allreduce"},
          {"collective", "allreduce"},
          {"protocol", "LL"},
          {"inplace", true},
          {"gpus", gpus}};
}

// AllGather in LL packets over port channels, out of place: rank r copies its input to
// output[r] and as packets to its scratch[n]; past a nop (the proxy must see whole packets),
// puts those packets as they are into every peer's scratch[r] (port ppkt); then unpacks each
// peer's packets from scratch[p] into output[p].
inline json portPacketAllGather(int n) {
  json gpus = json::array();
  for (int r = 0; r < n; ++r) {
    const std::vector<int> peers = peersOf(r, n);
    const int k = n - 1;
    json ops = json::array(
        {{{"name", "copy"}, {"src_buff", {entry("i", 0)}}, {"dst_buff", {entry("o", r)}}},
         {{"name", "cpkt"}, {"src_buff", {entry("i", 0)}}, {"dst_buff", {entry("s", n)}}},
         nop()});
    for (int j = 0; j < k; ++j)
      ops.push_back({{"name", "ppkt"},
                     {"channel_type", "port"},
                     {"channel_ids", {j}},
                     {"src_buff", {entry("s", n)}},
                     {"dst_buff", {remoteEntry(j, r)}}});
    for (int p : peers)
      ops.push_back(
          {{"name", "upkt"}, {"src_buff", {entry("s", p)}}, {"dst_buff", {entry("o", p)}}});
    gpus.push_back(oneThreadblockGpu(r, 1, n, n + 1, "port", peers,
                                     remoteBuffers(peers, "s", "port"), std::move(ops)));
  }
  return {{"name", "port_packet_allgather"},
          {"collective", "allgather"},
          {"protocol", "LL"},
          {"inplace", false},
          {"gpus", gpus}};
}

// AllToAll in place over memory channels, n ranks, as MSCCL++'s alltoall_pipeline: two
// channels to each peer (a handshake set, then a data set). Per peer j, threadblock j opens with
// a relaxed handshake, then pipelines {put input[peer] into the peer's scratch, signal, release
// semaphore j}; threadblock n-1+j pipelines {acquire semaphore j (the put has read input[peer]),
// wait, copy scratch[j] into input[peer]}. Both loops run units of `unitBytes`.
inline json pipelinedAllToAll(int n, long long unitBytes) {
  json gpus = json::array();
  const int k = n - 1;
  auto pipeline = [&](json body) {
    return json{{"name", "pipeline"},
                {"iter_context", {{"unit_size", unitBytes}, {"num_chunks", 1}}},
                {"ops", std::move(body)}};
  };
  for (int r = 0; r < n; ++r) {
    const std::vector<int> peers = peersOf(r, n);
    std::vector<int> connected = peers;
    connected.insert(connected.end(), peers.begin(), peers.end());
    json semaphores = json::array();
    json tbs = json::array();
    for (int j = 0; j < k; ++j) {
      const std::vector<int> theirs = peersOf(peers[j], n);
      const int slot =
          static_cast<int>(std::find(theirs.begin(), theirs.end(), r) - theirs.begin());
      semaphores.push_back({{"init_value", 0}});
      tbs.push_back({{"id", j},
                     {"channels", {{{"channel_type", "memory"}, {"channel_ids", {j, k + j}}}}},
                     {"remote_buffer_refs",
                      {{{"access_channel_type", "memory"}, {"remote_buffer_ids", {j}}}}},
                     {"ops",
                      {syncOp("rlxsignal", "memory", {0}), syncOp("rlxwait", "memory", {0}), nop(),
                       pipeline({{{"name", "put"},
                                  {"channel_type", "memory"},
                                  {"src_buff", {entry("i", peers[j])}},
                                  {"dst_buff", {remoteEntry(0, slot)}}},
                                 nop(),
                                 syncOp("signal", "memory", {1}),
                                 nop(),
                                 {{"name", "sem_release"}, {"semaphore_ids", {j}}}})}}});
    }
    for (int j = 0; j < k; ++j)
      tbs.push_back({{"id", k + j},
                     {"channels", {{{"channel_type", "memory"}, {"channel_ids", {k + j}}}}},
                     {"remote_buffer_refs", json::array()},
                     {"ops",
                      {pipeline({{{"name", "sem_acquire"}, {"semaphore_ids", {j}}},
                                 nop(),
                                 syncOp("wait", "memory", {0}),
                                 nop(),
                                 {{"name", "copy"},
                                  {"src_buff", {entry("s", j)}},
                                  {"dst_buff", {entry("i", peers[j])}}}})}}});
    gpus.push_back({{"id", r},
                    {"input_chunks", n},
                    {"output_chunks", n},
                    {"scratch_chunks", k},
                    {"channels", {{{"channel_type", "memory"}, {"connected_to", connected}}}},
                    {"remote_buffers", remoteBuffers(peers, "s", "memory")},
                    {"semaphores", semaphores},
                    {"threadblocks", tbs}});
  }
  return {{"name", "pipelined_alltoall"},
          {"collective", "alltoall"},
          {"protocol", "Simple"},
          {"inplace", true},
          {"gpus", gpus}};
}

// `plan` with every pipeline op replaced by its body: what chorus reads a pipeline as.
inline json withoutPipelines(json plan) {
  for (json& gpu : plan["gpus"])
    for (json& tb : gpu["threadblocks"]) {
      json flat = json::array();
      for (json& op : tb["ops"]) {
        if (op["name"] != "pipeline") {
          flat.push_back(op);
          continue;
        }
        for (json& inner : op["ops"])
          flat.push_back(inner);
      }
      tb["ops"] = flat;
    }
  return plan;
}

}  // namespace chorus::testing_support::mscclpp_plans
