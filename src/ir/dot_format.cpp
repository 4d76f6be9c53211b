#include "ir/dot_format.h"

#include <map>
#include <tuple>
#include <vector>

#include <fmt/format.h>

namespace chorus::ir {
namespace {

std::string quoted(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  out += '"';
  return out;
}

std::string_view shortBuffer(BufferKind buffer) {
  switch (buffer) {
    case BufferKind::input:
      return "in";
    case BufferKind::output:
      return "out";
    case BufferKind::scratch:
      return "sc";
  }
  return "?";
}

std::string nodeId(int rank, int tb, int step) {
  return fmt::format("r{}_t{}_s{}", rank, tb, step);
}

// A step's own peer and channel, when set: " peer=3 ch=1".
std::string endpointLabel(const Step& step) {
  std::string out;
  if (step.peer != -1) out += fmt::format(" peer={}", step.peer);
  if (step.channel != -1) out += fmt::format(" ch={}", step.channel);
  return out;
}

std::string stepLabel(int index, const Step& step) {
  if (opMovesNoData(step.op))
    return fmt::format("{}: {}{}", index, opName(step.op), endpointLabel(step));
  return fmt::format("{}: {} {}[{}] -> {}[{}] x{}{}", index, opName(step.op),
                     shortBuffer(step.srcBuffer), step.srcIndex, shortBuffer(step.dstBuffer),
                     step.dstIndex, step.count, endpointLabel(step));
}

std::string peerText(int peer) {
  return peer < 0 ? std::string("-") : std::to_string(peer);
}

}  // namespace

std::string writeDot(const Algorithm& algorithm) {
  std::string out;
  out += fmt::format("digraph {} {{\n", quoted(algorithm.name));
  out += fmt::format("  label={};\n",
                     quoted(fmt::format("{} ({}, {} ranks, {}, {})", algorithm.name,
                                        collectiveName(algorithm.collective), algorithm.nranks,
                                        protocolName(algorithm.protocol),
                                        algorithm.inPlace ? "in-place" : "out-of-place")));
  out += "  node [shape=box, fontname=\"monospace\", fontsize=10];\n";

  using Connection = std::tuple<int, int, int>;  // (sender rank, receiver rank, channel)
  std::map<Connection, std::vector<std::string>> sends;
  std::map<Connection, std::vector<std::string>> recvs;
  std::string depEdges;

  for (const RankProgram& program : algorithm.ranks) {
    const int r = program.rank;
    out += fmt::format("  subgraph cluster_r{} {{\n    label=\"rank {}\";\n", r, r);
    for (const Threadblock& tb : program.threadblocks) {
      out += fmt::format(
          "    subgraph cluster_r{}_t{} {{\n      label=\"tb {} send={} recv={} "
          "ch={}\";\n",
          r, tb.id, tb.id, peerText(tb.sendPeer), peerText(tb.recvPeer), tb.channel);
      for (std::size_t s = 0; s < tb.steps.size(); ++s) {
        const Step& step = tb.steps[s];
        const int index = static_cast<int>(s);
        const std::string id = nodeId(r, tb.id, index);
        out += fmt::format("      {} [label={}{}];\n", id, quoted(stepLabel(index, step)),
                           step.hasDependents ? ", peripheries=2" : "");
        if (s > 0) {
          out += fmt::format("      {} -> {} [color=gray];\n", nodeId(r, tb.id, index - 1), id);
        }
        if (opSends(step.op) && tb.sendPeer >= 0) {
          sends[{r, tb.sendPeer, tb.channel}].push_back(id);
        }
        if (opReceives(step.op) && tb.recvPeer >= 0) {
          recvs[{tb.recvPeer, r, tb.channel}].push_back(id);
        }
        for (const StepRef& dep : step.deps) {
          depEdges += fmt::format("  {} -> {} [style=dashed];\n", nodeId(r, dep.tb, dep.step), id);
        }
      }
      out += "    }\n";
    }
    out += "  }\n";
  }
  for (const auto& [connection, senders] : sends) {
    auto it = recvs.find(connection);
    if (it == recvs.end()) continue;
    const std::vector<std::string>& receivers = it->second;
    for (std::size_t k = 0; k < senders.size() && k < receivers.size(); ++k) {
      out += fmt::format("  {} -> {} [color=blue, label=\"ch{}\"];\n", senders[k], receivers[k],
                         std::get<2>(connection));
    }
  }
  out += depEdges;
  out += "}\n";
  return out;
}

std::string writeDagDot(const Dag& dag) {
  std::string out;
  out += fmt::format("digraph {} {{\n", quoted(dag.name));
  out += "  node [shape=box, fontname=\"monospace\", fontsize=10];\n";
  auto location = [](const ChunkLoc& loc) {
    return fmt::format("r{}.{}[{}]", loc.rank, shortBuffer(loc.buffer), loc.index);
  };
  for (const DagOp& op : dag.ops) {
    const std::string label =
        fmt::format("{} {} -> {} x{}", op.kind == DagOpKind::copy ? "copy" : "reduce",
                    location(op.src), location(op.dst), op.count);
    out += fmt::format("  op{} [label={}", op.id, quoted(label));
    if (const std::string& where = dag.whereOf(op); !where.empty())
      out += fmt::format(", tooltip={}", quoted(where));
    out += "];\n";
  }
  for (const DagOp& op : dag.ops) {
    for (int dep : op.trueDeps)
      out += fmt::format("  op{} -> op{};\n", dep, op.id);
    for (int dep : op.falseDeps)
      out += fmt::format("  op{} -> op{} [style=dashed];\n", dep, op.id);
  }
  out += "}\n";
  return out;
}

}  // namespace chorus::ir
