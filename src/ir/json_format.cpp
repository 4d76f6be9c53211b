#include "ir/json_format.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <initializer_list>
#include <limits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "support/error.h"
#include "support/strings.h"

namespace chorus::ir {
namespace {

using Json = nlohmann::ordered_json;

constexpr std::string_view kFormatName = kChorusJsonFormat;
constexpr int kVersion = 1;

// ---------------------------------------------------------------------------------------------
// Writing

void appendString(std::string& out, std::string_view text) {
  out += Json(text).dump(-1, ' ', false, Json::error_handler_t::replace);
}

void appendLocation(std::string& out, BufferKind buffer, int index) {
  out += "[\"";
  out += bufferName(buffer);
  out += "\", ";
  appendInt(out, index);
  out += ']';
}

void appendStep(std::string& out, const Step& step) {
  out += "{\"op\": \"";
  out += opName(step.op);
  out += '"';
  // Only when set, so plans without one-sided steps print as they always did.
  if (step.peer != -1) {
    out += ", \"peer\": ";
    appendInt(out, step.peer);
  }
  if (step.channel != -1) {
    out += ", \"channel\": ";
    appendInt(out, step.channel);
  }
  out += ", \"src\": ";
  appendLocation(out, step.srcBuffer, step.srcIndex);
  out += ", \"dst\": ";
  appendLocation(out, step.dstBuffer, step.dstIndex);
  out += ", \"count\": ";
  appendInt(out, step.count);
  out += ", \"deps\": [";
  for (std::size_t d = 0; d < step.deps.size(); ++d) {
    if (d) out += ", ";
    out += '[';
    appendInt(out, step.deps[d].tb);
    out += ", ";
    appendInt(out, step.deps[d].step);
    out += ']';
  }
  out += "], \"hasDependents\": ";
  out += step.hasDependents ? "true" : "false";
  out += '}';
}

void appendThreadblock(std::string& out, const Threadblock& tb) {
  out += "        {\n          \"id\": ";
  appendInt(out, tb.id);
  out += ",\n          \"send\": ";
  appendInt(out, tb.sendPeer);
  out += ",\n          \"recv\": ";
  appendInt(out, tb.recvPeer);
  out += ",\n          \"channel\": ";
  appendInt(out, tb.channel);
  out += ",\n          \"steps\": [";
  for (std::size_t s = 0; s < tb.steps.size(); ++s) {
    out += s ? ",\n            " : "\n            ";
    appendStep(out, tb.steps[s]);
  }
  out += tb.steps.empty() ? "]\n        }" : "\n          ]\n        }";
}

void appendRank(std::string& out, const RankProgram& program) {
  out += "    {\n      \"rank\": ";
  appendInt(out, program.rank);
  out += ",\n      \"inputChunks\": ";
  appendInt(out, program.inputChunks);
  out += ",\n      \"outputChunks\": ";
  appendInt(out, program.outputChunks);
  out += ",\n      \"scratchChunks\": ";
  appendInt(out, program.scratchChunks);
  out += ",\n      \"threadblocks\": [";
  for (std::size_t t = 0; t < program.threadblocks.size(); ++t) {
    out += t ? ",\n" : "\n";
    appendThreadblock(out, program.threadblocks[t]);
  }
  out += program.threadblocks.empty() ? "]\n    }" : "\n      ]\n    }";
}

// ---------------------------------------------------------------------------------------------
// Reading

// A JSON path, rendered only when an error is reported ("ranks[2].threadblocks[0].id").
struct JsonPath {
  const JsonPath* parent = nullptr;
  std::string_view key;
  int index = -1;

  JsonPath member(std::string_view name) const { return {this, name, -1}; }
  JsonPath element(int i) const { return {this, {}, i}; }

  std::string render() const {
    std::string prefix = parent ? parent->render() : std::string();
    if (index >= 0) return fmt::format("{}[{}]", prefix, index);
    if (prefix.empty()) return std::string(key);
    return fmt::format("{}.{}", prefix, key);
  }
};

std::string_view typeName(const Json& value) {
  if (value.is_number_integer()) return "integer";
  return value.type_name();
}

class JsonReader {
 public:
  explicit JsonReader(const std::string& sourceName) : source_(sourceName) {}

  Algorithm read(std::string_view text) {
    Json root;
    try {
      root = Json::parse(text.begin(), text.end());
    } catch (const Json::exception& error) {
      // parse_error, and out_of_range for numbers beyond double (found by fuzz_plan_reader).
      throw ParseError(fmt::format("{}: malformed JSON: {}", source_, error.what()));
    }
    const JsonPath top;
    expectObject(root, top,
                 {"format", "version", "name", "collective", "customName", "root", "protocol",
                  "inPlace", "nranks", "chunksPerLoop", "minBytes", "maxBytes", "ranks"});
    const std::string format = string(root, top, "format");
    if (format != kFormatName) {
      fail(top.member("format"), fmt::format("is '{}' (expected \"{}\")", format, kFormatName));
    }
    const long long version = integer(root, top, "version", 0, std::numeric_limits<int>::max());
    if (version != kVersion) {
      fail(top.member("version"),
           fmt::format("is {} (this chorus reads version {})", version, kVersion));
    }

    Algorithm algorithm;
    algorithm.name = string(root, top, "name");
    const std::string collective = string(root, top, "collective");
    auto kind = parseCollectiveName(collective);
    if (!kind) {
      fail(top.member("collective"),
           fmt::format("unknown collective '{}' (expected one of allreduce, allgather, "
                       "reducescatter, alltoall, broadcast, reduce, custom)",
                       collective));
    }
    algorithm.collective = *kind;
    if (root.contains("customName")) algorithm.customName = string(root, top, "customName");
    const std::string protocol = string(root, top, "protocol");
    auto proto = parseProtocolName(protocol);
    if (!proto) {
      fail(top.member("protocol"),
           fmt::format("unknown protocol '{}' (expected one of Simple, LL, LL128)", protocol));
    }
    algorithm.protocol = *proto;
    algorithm.inPlace = boolean(root, top, "inPlace");
    algorithm.nranks = integer(root, top, "nranks", 1, std::numeric_limits<int>::max());
    algorithm.chunksPerLoop =
        integer(root, top, "chunksPerLoop", 0, std::numeric_limits<int>::max());
    if (root.contains("root")) algorithm.root = integer(root, top, "root", 0, algorithm.nranks - 1);
    if (root.contains("minBytes")) algorithm.minBytes = bytes(root, top, "minBytes");
    if (root.contains("maxBytes")) algorithm.maxBytes = bytes(root, top, "maxBytes");

    const JsonPath ranksPath = top.member("ranks");
    const Json& ranks = array(root, top, "ranks");
    if (static_cast<long long>(ranks.size()) != algorithm.nranks) {
      fail(ranksPath,
           fmt::format("has {} entries but nranks is {}", ranks.size(), algorithm.nranks));
    }
    algorithm.ranks.reserve(ranks.size());
    for (std::size_t r = 0; r < ranks.size(); ++r) {
      algorithm.ranks.push_back(readRank(ranks[r], ranksPath.element(static_cast<int>(r)),
                                         static_cast<int>(r), algorithm.nranks));
    }
    return algorithm;
  }

 private:
  [[noreturn]] void fail(const JsonPath& path, const std::string& what) const {
    std::string where = path.render();
    if (where.empty()) where = "top level";
    throw ParseError(fmt::format("{}: {}: {}", source_, where, what));
  }

  void expectObject(const Json& value, const JsonPath& path,
                    std::initializer_list<std::string_view> allowed) const {
    if (!value.is_object())
      fail(path, fmt::format("is a {} (expected an object)", typeName(value)));
    for (auto it = value.begin(); it != value.end(); ++it) {
      if (std::find(allowed.begin(), allowed.end(), it.key()) == allowed.end()) {
        std::string names;
        for (std::string_view name : allowed)
          names += (names.empty() ? "" : ", ") + std::string(name);
        fail(path.member(it.key()), fmt::format("unknown field (expected one of {})", names));
      }
    }
  }

  const Json& field(const Json& object, const JsonPath& path, std::string_view key) const {
    auto it = object.find(key);
    if (it == object.end()) fail(path.member(key), "is missing");
    return *it;
  }

  std::string string(const Json& object, const JsonPath& path, std::string_view key) const {
    const Json& value = field(object, path, key);
    if (!value.is_string()) {
      fail(path.member(key), fmt::format("is a {} (expected a string)", typeName(value)));
    }
    return value.get<std::string>();
  }

  bool boolean(const Json& object, const JsonPath& path, std::string_view key) const {
    const Json& value = field(object, path, key);
    if (!value.is_boolean()) {
      fail(path.member(key), fmt::format("is a {} (expected true or false)", typeName(value)));
    }
    return value.get<bool>();
  }

  int integerValue(const Json& value, const JsonPath& path, long long lo, long long hi) const {
    if (!value.is_number_integer()) {
      fail(path, fmt::format("is a {} (expected an integer)", typeName(value)));
    }
    const bool tooLarge = value.is_number_unsigned() &&
                          value.get<std::uint64_t>() >
                              static_cast<std::uint64_t>(std::numeric_limits<long long>::max());
    const long long v = tooLarge ? std::numeric_limits<long long>::max() : value.get<long long>();
    if (tooLarge || v < lo || v > hi) {
      fail(path, fmt::format("is {} (expected an integer in {}..{})", value.dump(), lo, hi));
    }
    return static_cast<int>(v);
  }

  int integer(const Json& object, const JsonPath& path, std::string_view key, long long lo,
              long long hi) const {
    return integerValue(field(object, path, key), path.member(key), lo, hi);
  }

  std::uint64_t bytes(const Json& object, const JsonPath& path, std::string_view key) const {
    const Json& value = field(object, path, key);
    if (!value.is_number_unsigned()) {
      fail(path.member(key), fmt::format("is {} (expected a non-negative integer)", value.dump()));
    }
    return value.get<std::uint64_t>();
  }

  const Json& array(const Json& object, const JsonPath& path, std::string_view key) const {
    const Json& value = field(object, path, key);
    if (!value.is_array()) {
      fail(path.member(key), fmt::format("is a {} (expected an array)", typeName(value)));
    }
    return value;
  }

  RankProgram readRank(const Json& value, const JsonPath& path, int rank, int nranks) const {
    expectObject(value, path,
                 {"rank", "inputChunks", "outputChunks", "scratchChunks", "threadblocks"});
    RankProgram program;
    program.rank = integer(value, path, "rank", 0, nranks - 1);
    if (program.rank != rank) {
      fail(path.member("rank"), fmt::format("is {} but the entry is ranks[{}] (ranks must be "
                                            "listed in order)",
                                            program.rank, rank));
    }
    const int kMax = std::numeric_limits<int>::max();
    program.inputChunks = integer(value, path, "inputChunks", 0, kMax);
    program.outputChunks = integer(value, path, "outputChunks", 0, kMax);
    program.scratchChunks = integer(value, path, "scratchChunks", 0, kMax);
    const JsonPath tbsPath = path.member("threadblocks");
    const Json& tbs = array(value, path, "threadblocks");
    program.threadblocks.reserve(tbs.size());
    for (std::size_t t = 0; t < tbs.size(); ++t) {
      program.threadblocks.push_back(readThreadblock(tbs[t], tbsPath.element(static_cast<int>(t)),
                                                     static_cast<int>(t), nranks));
    }
    checkDependencies(tbsPath, program);
    return program;
  }

  Threadblock readThreadblock(const Json& value, const JsonPath& path, int id, int nranks) const {
    expectObject(value, path, {"id", "send", "recv", "channel", "steps"});
    Threadblock tb;
    tb.id = integer(value, path, "id", 0, std::numeric_limits<int>::max());
    if (tb.id != id) {
      fail(path.member("id"),
           fmt::format("is {} but the entry is threadblocks[{}] (ids must be contiguous from 0, "
                       "in order)",
                       tb.id, id));
    }
    tb.sendPeer = integer(value, path, "send", -1, nranks - 1);
    tb.recvPeer = integer(value, path, "recv", -1, nranks - 1);
    tb.channel = integer(value, path, "channel", 0, std::numeric_limits<int>::max());
    const JsonPath stepsPath = path.member("steps");
    const Json& steps = array(value, path, "steps");
    tb.steps.reserve(steps.size());
    for (std::size_t s = 0; s < steps.size(); ++s) {
      tb.steps.push_back(readStep(steps[s], stepsPath.element(static_cast<int>(s)), nranks));
    }
    return tb;
  }

  void readLocation(const Json& object, const JsonPath& path, std::string_view key,
                    BufferKind& buffer, int& index) const {
    const JsonPath at = path.member(key);
    const Json& value = field(object, path, key);
    if (!value.is_array() || value.size() != 2 || !value[0].is_string()) {
      fail(at,
           fmt::format("is {} (expected [buffer, index] such as [\"input\", 3])", value.dump()));
    }
    auto kind = parseBufferName(value[0].get<std::string>());
    if (!kind) {
      fail(at.element(0), fmt::format("unknown buffer {} (expected one of input, output, scratch)",
                                      value[0].dump()));
    }
    buffer = *kind;
    index = integerValue(value[1], at.element(1), 0, std::numeric_limits<int>::max());
  }

  // A step's optional "peer" or "channel": -1 (the threadblock's, as when absent) or at least
  // `lo`, and at most `hi`.
  int endpoint(const Json& object, const JsonPath& path, std::string_view key, long long lo,
               long long hi, std::string_view accepted) const {
    if (!object.contains(key)) return -1;
    const JsonPath at = path.member(key);
    const long long kMin = std::numeric_limits<int>::min();
    const long long kMax = std::numeric_limits<int>::max();
    const int v = integerValue(field(object, path, key), at, kMin, kMax);
    if (v != -1 && (v < lo || v > hi)) fail(at, fmt::format("is {} (expected {})", v, accepted));
    return v;
  }

  Step readStep(const Json& value, const JsonPath& path, int nranks) const {
    expectObject(value, path,
                 {"op", "peer", "channel", "src", "dst", "count", "deps", "hasDependents"});
    Step step;
    const std::string op = string(value, path, "op");
    auto kind = parseOpName(op);
    if (!kind) {
      fail(path.member("op"),
           fmt::format("unknown op '{}' (expected one of {})", op, opNameList()));
    }
    step.op = *kind;
    step.peer =
        endpoint(value, path, "peer", 0, nranks - 1,
                 fmt::format("-1 for the threadblock's peer, or a rank in 0..{}", nranks - 1));
    step.channel = endpoint(value, path, "channel", 0, std::numeric_limits<int>::max(),
                            "-1 for the threadblock's channel, or a channel >= 0");
    readLocation(value, path, "src", step.srcBuffer, step.srcIndex);
    readLocation(value, path, "dst", step.dstBuffer, step.dstIndex);
    step.count = integer(value, path, "count", 0, std::numeric_limits<int>::max());
    if (value.contains("deps")) {
      const JsonPath depsPath = path.member("deps");
      const Json& deps = array(value, path, "deps");
      step.deps.reserve(deps.size());
      for (std::size_t d = 0; d < deps.size(); ++d) {
        const JsonPath at = depsPath.element(static_cast<int>(d));
        const Json& dep = deps[d];
        if (!dep.is_array() || dep.size() != 2) {
          fail(at, fmt::format("is {} (expected [threadblock, step])", dep.dump()));
        }
        StepRef ref;
        ref.tb = integerValue(dep[0], at.element(0), 0, std::numeric_limits<int>::max());
        ref.step = integerValue(dep[1], at.element(1), 0, std::numeric_limits<int>::max());
        step.deps.push_back(ref);
      }
      std::sort(step.deps.begin(), step.deps.end());
      step.deps.erase(std::unique(step.deps.begin(), step.deps.end()), step.deps.end());
    }
    if (value.contains("hasDependents")) step.hasDependents = boolean(value, path, "hasDependents");
    return step;
  }

  // Every dependency names an existing step of another threadblock of the same rank.
  void checkDependencies(const JsonPath& tbsPath, const RankProgram& program) const {
    const int ntb = static_cast<int>(program.threadblocks.size());
    for (int t = 0; t < ntb; ++t) {
      const auto& steps = program.threadblocks[t].steps;
      for (std::size_t s = 0; s < steps.size(); ++s) {
        for (const StepRef& dep : steps[s].deps) {
          const bool valid = dep.tb < ntb && dep.tb != t &&
                             dep.step < static_cast<int>(program.threadblocks[dep.tb].steps.size());
          if (valid) continue;
          const JsonPath tbPath = tbsPath.element(t);
          const JsonPath stepsPath = tbPath.member("steps");
          const JsonPath stepPath = stepsPath.element(static_cast<int>(s));
          const JsonPath depsPath = stepPath.member("deps");
          if (dep.tb == t) {
            fail(depsPath, fmt::format("names its own threadblock {} (deps are cross-threadblock "
                                       "waits; program order already orders a threadblock)",
                                       t));
          }
          if (dep.tb >= ntb) {
            fail(depsPath, fmt::format("names threadblock {} but rank {} has {} threadblocks",
                                       dep.tb, program.rank, ntb));
          }
          fail(depsPath, fmt::format("names step {} of threadblock {}, which has {} steps",
                                     dep.step, dep.tb, program.threadblocks[dep.tb].steps.size()));
        }
      }
    }
  }

  const std::string& source_;
};

}  // namespace

std::string writeJson(const Algorithm& algorithm) {
  std::string out;
  out.reserve(160 * stepCount(algorithm) + 1024);
  out += "{\n  \"format\": \"";
  out += kFormatName;
  out += "\",\n  \"version\": ";
  appendInt(out, kVersion);
  out += ",\n  \"name\": ";
  appendString(out, algorithm.name);
  out += ",\n  \"collective\": \"";
  out += collectiveName(algorithm.collective);
  out += "\",\n  \"customName\": ";
  appendString(out, algorithm.customName);
  out += ",\n  \"root\": ";
  appendInt(out, algorithm.root);
  out += ",\n  \"protocol\": \"";
  out += protocolName(algorithm.protocol);
  out += "\",\n  \"inPlace\": ";
  out += algorithm.inPlace ? "true" : "false";
  out += ",\n  \"nranks\": ";
  appendInt(out, algorithm.nranks);
  out += ",\n  \"chunksPerLoop\": ";
  appendInt(out, algorithm.chunksPerLoop);
  out += ",\n  \"minBytes\": ";
  out += std::to_string(algorithm.minBytes);
  out += ",\n  \"maxBytes\": ";
  out += std::to_string(algorithm.maxBytes);
  out += ",\n  \"ranks\": [";
  for (std::size_t r = 0; r < algorithm.ranks.size(); ++r) {
    out += r ? ",\n" : "\n";
    appendRank(out, algorithm.ranks[r]);
  }
  out += algorithm.ranks.empty() ? "]\n}\n" : "\n  ]\n}\n";
  return out;
}

Algorithm readJson(std::string_view text, const std::string& sourceName) {
  return JsonReader(sourceName).read(text);
}

}  // namespace chorus::ir
