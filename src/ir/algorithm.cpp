#include "ir/algorithm.h"

#include <algorithm>
#include <cctype>
#include <limits>
#include <string>

namespace chorus::ir {

namespace {

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

}  // namespace

int channelCount(const Algorithm& algorithm) {
  int maxChannel = 0;
  for (const auto& rank : algorithm.ranks)
    for (const auto& tb : rank.threadblocks)
      maxChannel = std::max(maxChannel, tb.channel);
  return maxChannel + 1;
}

std::size_t stepCount(const Algorithm& algorithm) {
  std::size_t n = 0;
  for (const auto& rank : algorithm.ranks)
    for (const auto& tb : rank.threadblocks)
      n += tb.steps.size();
  return n;
}

std::size_t dependencyCount(const Algorithm& algorithm) {
  std::size_t n = 0;
  for (const auto& rank : algorithm.ranks)
    for (const auto& tb : rank.threadblocks)
      for (const auto& step : tb.steps)
        n += step.deps.size();
  return n;
}

std::size_t threadblockCount(const Algorithm& algorithm) {
  std::size_t n = 0;
  for (const auto& rank : algorithm.ranks)
    n += rank.threadblocks.size();
  return n;
}

std::size_t protocolMessageCap(Protocol protocol) {
  switch (protocol) {
    case Protocol::ll:
      return kLlMessageCap;
    case Protocol::ll128:
      return kLl128MessageCap;
    case Protocol::simple:
      break;
  }
  return std::numeric_limits<std::size_t>::max();
}

std::size_t chunksPerBlock(const Algorithm& algorithm) {
  // The loop buffer holds `blocks` blocks of `count` elements.
  std::size_t blocks = 1;
  switch (algorithm.collective) {
    case CollectiveKind::allgather:
    case CollectiveKind::reducescatter:
    case CollectiveKind::alltoall:
      blocks = static_cast<std::size_t>(std::max(algorithm.nranks, 1));
      break;
    default:
      break;
  }
  return std::max<std::size_t>(1, static_cast<std::size_t>(algorithm.chunksPerLoop) / blocks);
}

std::string_view opName(OpKind op) {
  return opSemantics(op).name;
}

std::string_view opMscclCode(OpKind op) {
  const char* code = opSemantics(op).mscclCode;
  return code ? std::string_view(code) : std::string_view();
}

std::optional<OpKind> parseOpName(std::string_view name) {
  for (const auto& row : kOpTable.rows)
    if (row.name == name) return row.op;
  return std::nullopt;
}

std::optional<OpKind> parseOpMscclCode(std::string_view code) {
  for (const auto& row : kOpTable.rows)
    if (row.mscclCode && row.mscclCode == code) return row.op;
  return std::nullopt;
}

std::string opNameList() {
  std::string out;
  for (const auto& row : kOpTable.rows)
    out += (out.empty() ? "" : ", ") + std::string(row.name);
  return out;
}

std::string opMscclCodeList() {
  std::string out;
  for (const auto& row : kOpTable.rows)
    if (row.mscclCode) out += (out.empty() ? "" : ", ") + std::string(row.mscclCode);
  return out;
}

std::string_view bufferName(BufferKind buffer) {
  switch (buffer) {
    case BufferKind::input:
      return "input";
    case BufferKind::output:
      return "output";
    case BufferKind::scratch:
      return "scratch";
  }
  return "?";
}

char bufferMscclCode(BufferKind buffer) {
  return bufferName(buffer)[0];
}

std::optional<BufferKind> parseBufferName(std::string_view name) {
  if (name == "i" || name == "input") return BufferKind::input;
  if (name == "o" || name == "output") return BufferKind::output;
  if (name == "s" || name == "scratch") return BufferKind::scratch;
  return std::nullopt;
}

std::string_view channelTypeName(ChannelType type) {
  return type == ChannelType::port ? "port" : "memory";
}

std::string_view protocolName(Protocol protocol) {
  switch (protocol) {
    case Protocol::simple:
      return "Simple";
    case Protocol::ll:
      return "LL";
    case Protocol::ll128:
      return "LL128";
  }
  return "?";
}

std::optional<Protocol> parseProtocolName(std::string_view name) {
  const std::string l = lower(name);
  if (l == "simple") return Protocol::simple;
  if (l == "ll") return Protocol::ll;
  if (l == "ll128") return Protocol::ll128;
  return std::nullopt;
}

bool collectiveReduces(CollectiveKind kind) {
  return kind == CollectiveKind::allreduce || kind == CollectiveKind::reducescatter ||
         kind == CollectiveKind::reduce;
}

std::string_view collectiveName(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::allreduce:
      return "allreduce";
    case CollectiveKind::allgather:
      return "allgather";
    case CollectiveKind::reducescatter:
      return "reducescatter";
    case CollectiveKind::alltoall:
      return "alltoall";
    case CollectiveKind::broadcast:
      return "broadcast";
    case CollectiveKind::reduce:
      return "reduce";
    case CollectiveKind::custom:
      return "custom";
  }
  return "?";
}

std::optional<CollectiveKind> parseCollectiveName(std::string_view name) {
  const std::string l = lower(name);
  if (l == "reduce_scatter") return CollectiveKind::reducescatter;
  for (auto kind : {CollectiveKind::allreduce, CollectiveKind::allgather,
                    CollectiveKind::reducescatter, CollectiveKind::alltoall,
                    CollectiveKind::broadcast, CollectiveKind::reduce, CollectiveKind::custom})
    if (collectiveName(kind) == l) return kind;
  return std::nullopt;
}

}  // namespace chorus::ir
