#include "ir/msccl_xml.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <utility>

#include <fmt/format.h>
#include <pugixml.hpp>

#include "support/error.h"
#include "support/strings.h"

namespace chorus::ir {
namespace {

// MSCCL runtime limits (msccl-executor-nccl src/include/msccl/msccl_struct.h; docs/sources.md
// "MSCCL XML and runtime").
constexpr int kMaxCount = 71;            // cnt < MSCCL_MAX_COUNT (72)
constexpr int kMaxOffset = 32767;        // offsets are int16
constexpr int kMaxChannel = 31;          // chan 0..31 (32 channels)
constexpr int kMaxThreadblockId = 1023;  // 32 tbs per channel x 32 channels
constexpr int kMaxDependeeTbId = 127;    // depid is int8

// ---------------------------------------------------------------------------------------------
// Reading

std::optional<long long> parseInteger(std::string_view text) {
  long long value = 0;
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  if (begin != end && *begin == '+') ++begin;
  auto [ptr, ec] = std::from_chars(begin, end, value);
  if (ec != std::errc() || ptr != end || begin == end) return std::nullopt;
  return value;
}

std::optional<std::uint64_t> parseUnsigned(std::string_view text) {
  std::uint64_t value = 0;
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(begin, end, value);
  if (ec != std::errc() || ptr != end || begin == end) return std::nullopt;
  return value;
}

// One <step> element as read, before dependencies are resolved.
struct RawStep {
  pugi::xml_node node;
  bool nop = false;
  int depTb = -1;
  int depStep = -1;
  int irIndex = -1;         // index among the tb's real steps; -1 for a nop
  int lastRealBefore = -1;  // IR index of the last real step before this one, -1 if none
};

struct RawThreadblock {
  pugi::xml_node node;
  std::vector<RawStep> steps;
};

class XmlReader {
 public:
  XmlReader(std::string_view text, const std::string& sourceName)
      : text_(text), source_(sourceName) {}

  std::vector<Algorithm> read() {
    pugi::xml_document doc;
    const unsigned flags = pugi::parse_default | pugi::parse_fragment;
    pugi::xml_parse_result result =
        doc.load_buffer(text_.data(), text_.size(), flags, pugi::encoding_utf8);
    if (!result) {
      throw ParseError(fmt::format("{}:{}: malformed XML: {}", source_,
                                   lineOf(static_cast<std::ptrdiff_t>(result.offset)),
                                   result.description()));
    }
    std::vector<Algorithm> algorithms;
    for (pugi::xml_node child : doc.children()) {
      if (child.type() == pugi::node_pcdata || child.type() == pugi::node_cdata) {
        if (!isBlank(child.value())) failText(child, "unexpected text outside <algo>");
        continue;
      }
      if (child.type() != pugi::node_element) continue;
      if (std::strcmp(child.name(), "algo") != 0) {
        failText(child, fmt::format("unexpected element <{}> (expected <algo>)", child.name()));
      }
      algorithms.push_back(readAlgo(child));
    }
    if (algorithms.empty()) {
      throw ParseError(fmt::format("{}: no <algo> element found (expected MSCCL XML)", source_));
    }
    return algorithms;
  }

 private:
  static bool isBlank(const char* text) {
    for (; *text; ++text)
      if (*text != ' ' && *text != '\t' && *text != '\n' && *text != '\r') return false;
    return true;
  }

  int lineOf(std::ptrdiff_t offset) const {
    if (offset < 0) return 0;
    const auto end = std::min(static_cast<std::size_t>(offset), text_.size());
    return 1 + static_cast<int>(std::count(text_.begin(), text_.begin() + end, '\n'));
  }

  // "<gpu id=3>"; the element's position among its like-named siblings when the key is missing.
  static std::string label(pugi::xml_node node) {
    const char* name = node.name();
    const char* key = std::strcmp(name, "algo") == 0   ? "name"
                      : std::strcmp(name, "step") == 0 ? "s"
                                                       : "id";
    pugi::xml_attribute attr = node.attribute(key);
    if (attr) return fmt::format("<{} {}={}>", name, key, attr.value());
    int position = 0;
    for (pugi::xml_node sibling = node.previous_sibling(name); sibling;
         sibling = sibling.previous_sibling(name))
      ++position;
    return fmt::format("<{} #{}>", name, position);
  }

  // Element chain from <gpu> down to `node`; just "<algo ...>" for the algo itself.
  std::string describe(pugi::xml_node node) const {
    std::vector<std::string> labels;
    for (pugi::xml_node n = node; n && n.type() == pugi::node_element; n = n.parent()) {
      if (std::strcmp(n.name(), "algo") == 0 && n != node) break;
      labels.push_back(label(n));
    }
    std::string out;
    for (auto it = labels.rbegin(); it != labels.rend(); ++it) {
      if (!out.empty()) out += ' ';
      out += *it;
    }
    return out;
  }

  [[noreturn]] void fail(pugi::xml_node node, const std::string& what) const {
    throw ParseError(fmt::format("{}: {}: {} (line {})", source_, describe(node), what,
                                 lineOf(node.offset_debug())));
  }

  [[noreturn]] void failText(pugi::xml_node node, const std::string& what) const {
    throw ParseError(fmt::format("{}:{}: {}", source_, lineOf(node.offset_debug()), what));
  }

  const char* required(pugi::xml_node node, const char* name) const {
    pugi::xml_attribute attr = node.attribute(name);
    if (!attr) fail(node, fmt::format("attribute '{}' is missing", name));
    return attr.value();
  }

  // A required integer attribute in [lo, hi]; `expected` describes the range for the message.
  int integer(pugi::xml_node node, const char* name, long long lo, long long hi,
              std::string_view expected) const {
    return checkedInteger(node, name, required(node, name), lo, hi, expected);
  }

  int optionalInteger(pugi::xml_node node, const char* name, int fallback, long long lo,
                      long long hi, std::string_view expected) const {
    pugi::xml_attribute attr = node.attribute(name);
    if (!attr) return fallback;
    return checkedInteger(node, name, attr.value(), lo, hi, expected);
  }

  int checkedInteger(pugi::xml_node node, const char* name, const char* text, long long lo,
                     long long hi, std::string_view expected) const {
    auto value = parseInteger(text);
    if (!value) {
      fail(node, fmt::format("attribute '{}' has value '{}' (expected an integer)", name, text));
    }
    if (*value < lo || *value > hi) {
      fail(node, fmt::format("attribute '{}' has value '{}' (expected {})", name, text, expected));
    }
    return static_cast<int>(*value);
  }

  bool flag(pugi::xml_node node, const char* name, bool isRequired, bool fallback) const {
    pugi::xml_attribute attr = node.attribute(name);
    if (!attr) {
      if (isRequired) fail(node, fmt::format("attribute '{}' is missing", name));
      return fallback;
    }
    return checkedInteger(node, name, attr.value(), 0, 1, "0 or 1") == 1;
  }

  std::uint64_t bytes(pugi::xml_node node, const char* name) const {
    pugi::xml_attribute attr = node.attribute(name);
    if (!attr) return 0;
    auto value = parseUnsigned(attr.value());
    if (!value) {
      fail(node, fmt::format("attribute '{}' has value '{}' (expected a non-negative integer)",
                             name, attr.value()));
    }
    return *value;
  }

  BufferKind buffer(pugi::xml_node node, const char* name) const {
    const char* text = required(node, name);
    auto kind = parseBufferName(text);
    if (!kind) {
      fail(node, fmt::format("attribute '{}' has unknown value '{}' (expected one of i, o, s)",
                             name, text));
    }
    return *kind;
  }

  // Children of `parent` that must all be <childName> elements.
  std::vector<pugi::xml_node> elements(pugi::xml_node parent, const char* childName) const {
    std::vector<pugi::xml_node> out;
    for (pugi::xml_node child : parent.children()) {
      if (child.type() == pugi::node_pcdata || child.type() == pugi::node_cdata) {
        if (!isBlank(child.value())) {
          fail(parent, fmt::format("unexpected text '{}' (expected <{}> elements)", child.value(),
                                   childName));
        }
        continue;
      }
      if (child.type() != pugi::node_element) continue;
      if (std::strcmp(child.name(), childName) != 0) {
        fail(parent,
             fmt::format("unexpected element <{}> (expected <{}>)", child.name(), childName));
      }
      out.push_back(child);
    }
    return out;
  }

  Algorithm readAlgo(pugi::xml_node node) {
    Algorithm algorithm;
    algorithm.name = required(node, "name");
    const char* proto = required(node, "proto");
    auto protocol = parseProtocolName(proto);
    if (!protocol) {
      fail(node, fmt::format(
                     "attribute 'proto' has unknown value '{}' (expected one of Simple, LL, LL128)",
                     proto));
    }
    algorithm.protocol = *protocol;
    const int nchannels =
        integer(node, "nchannels", 1, std::numeric_limits<int>::max(), "an integer >= 1");
    algorithm.chunksPerLoop =
        integer(node, "nchunksperloop", 1, std::numeric_limits<int>::max(), "an integer >= 1");
    algorithm.nranks =
        integer(node, "ngpus", 1, std::numeric_limits<int>::max(), "an integer >= 1");
    const char* coll = required(node, "coll");
    auto collective = parseCollectiveName(coll);
    if (!collective) {
      fail(node, fmt::format("attribute 'coll' has unknown value '{}' (expected one of allreduce, "
                             "allgather, reducescatter, reduce_scatter, alltoall, broadcast, "
                             "reduce, custom)",
                             coll));
    }
    algorithm.collective = *collective;
    // chorus's extension: the custom collective's name, when it differs from the algo's.
    if (const pugi::xml_attribute custom = node.attribute("custom"))
      algorithm.customName = custom.value();
    algorithm.inPlace = flag(node, "inplace", true, false);
    flag(node, "outofplace", false, !algorithm.inPlace);
    algorithm.minBytes = bytes(node, "minBytes");
    algorithm.maxBytes = bytes(node, "maxBytes");
    if (algorithm.maxBytes != 0 && algorithm.maxBytes < algorithm.minBytes) {
      fail(node, fmt::format("attribute 'maxBytes' ({}) is below 'minBytes' ({}); use "
                             "maxBytes=\"0\" for no limit",
                             algorithm.maxBytes, algorithm.minBytes));
    }
    algorithm.root = optionalInteger(node, "root", 0, 0, algorithm.nranks - 1,
                                     fmt::format("a rank in 0..{}", algorithm.nranks - 1));

    const std::vector<pugi::xml_node> gpus = elements(node, "gpu");
    if (static_cast<long long>(gpus.size()) != algorithm.nranks) {
      fail(node, fmt::format("attribute 'ngpus' is {} but the algo has {} <gpu> elements",
                             algorithm.nranks, gpus.size()));
    }
    algorithm.ranks.resize(gpus.size());
    std::vector<bool> seen(gpus.size(), false);
    for (pugi::xml_node gpu : gpus) {
      const int id = integer(
          gpu, "id", 0, algorithm.nranks - 1,
          fmt::format("a rank in 0..{} (ngpus={})", algorithm.nranks - 1, algorithm.nranks));
      if (seen[id]) fail(gpu, fmt::format("duplicate <gpu id={}>", id));
      seen[id] = true;
      algorithm.ranks[id] = readGpu(gpu, id, algorithm.nranks, nchannels);
    }
    return algorithm;
  }

  RankProgram readGpu(pugi::xml_node node, int rank, int nranks, int nchannels) {
    RankProgram program;
    program.rank = rank;
    const int kMax = std::numeric_limits<int>::max();
    program.inputChunks = integer(node, "i_chunks", 0, kMax, "an integer >= 0");
    program.outputChunks = integer(node, "o_chunks", 0, kMax, "an integer >= 0");
    program.scratchChunks = integer(node, "s_chunks", 0, kMax, "an integer >= 0");

    const std::vector<pugi::xml_node> tbNodes = elements(node, "tb");
    const int ntb = static_cast<int>(tbNodes.size());
    std::vector<RawThreadblock> raw(tbNodes.size());
    program.threadblocks.resize(tbNodes.size());
    std::vector<bool> seen(tbNodes.size(), false);
    const std::string peerRange = fmt::format("-1 or a rank in 0..{}", nranks - 1);
    for (pugi::xml_node tbNode : tbNodes) {
      const int id =
          integer(tbNode, "id", 0, ntb - 1,
                  fmt::format("an id in 0..{}: tb ids must be contiguous from 0", ntb - 1));
      if (seen[id]) fail(tbNode, fmt::format("duplicate <tb id={}>", id));
      seen[id] = true;
      Threadblock& tb = program.threadblocks[id];
      tb.id = id;
      tb.sendPeer = integer(tbNode, "send", -1, nranks - 1, peerRange);
      tb.recvPeer = integer(tbNode, "recv", -1, nranks - 1, peerRange);
      tb.channel =
          integer(tbNode, "chan", 0, nchannels - 1,
                  fmt::format("a channel in 0..{} (nchannels={})", nchannels - 1, nchannels));
      raw[id].node = tbNode;
      readSteps(tbNode, ntb, raw[id], tb);
    }
    resolveDependencies(raw, program);
    return program;
  }

  // Parses one tb's steps: real steps go to tb.steps, every step (nops included) to raw.steps.
  void readSteps(pugi::xml_node tbNode, int ntb, RawThreadblock& raw, Threadblock& tb) {
    const std::string tbRange = fmt::format("-1 or a threadblock id of this gpu, 0..{}", ntb - 1);
    int position = 0;
    for (pugi::xml_node node : elements(tbNode, "step")) {
      const int s = integer(node, "s", 0, std::numeric_limits<int>::max(), "an integer >= 0");
      if (s != position) {
        fail(node, fmt::format("attribute 's' is {} but the step is at position {} of its <tb> "
                               "(steps are numbered 0, 1, 2, ... in document order, nops "
                               "included)",
                               s, position));
      }
      ++position;
      const char* type = required(node, "type");
      auto op = parseOpMscclCode(type);
      if (!op) {
        fail(node, fmt::format("attribute 'type' has unknown value '{}' (expected one of {})", type,
                               opMscclCodeList()));
      }
      RawStep rawStep;
      rawStep.node = node;
      rawStep.nop = *op == OpKind::nop;
      rawStep.lastRealBefore = static_cast<int>(tb.steps.size()) - 1;
      rawStep.depTb = optionalInteger(node, "depid", -1, -1, ntb - 1, tbRange);
      if (rawStep.depTb >= 0) {
        rawStep.depStep = integer(node, "deps", 0, std::numeric_limits<int>::max(),
                                  "a step index >= 0 (depid is set)");
      }
      if (!rawStep.nop) {
        // srcbuf/srcoff are taken as written for every op. For the receive-reduce ops (rrc, rrs,
        // rrcs) the MSCCL runtime reads srcoff as the LOCAL operand (result = received ⊕ src),
        // which is also the IR's meaning, even where msccl-tools wrote the peer's offset
        // (docs/ir.md; docs/sources.md "MSCCL XML and runtime"). No reinterpretation here.
        Step step;
        step.op = *op;
        step.srcBuffer = buffer(node, "srcbuf");
        step.srcIndex =
            integer(node, "srcoff", 0, std::numeric_limits<int>::max(), "an offset >= 0");
        step.dstBuffer = buffer(node, "dstbuf");
        step.dstIndex =
            integer(node, "dstoff", 0, std::numeric_limits<int>::max(), "an offset >= 0");
        step.count = integer(node, "cnt", 1, std::numeric_limits<int>::max(), "a count >= 1");
        step.hasDependents = flag(node, "hasdep", false, false);
        rawStep.irIndex = static_cast<int>(tb.steps.size());
        tb.steps.push_back(std::move(step));
      } else {
        flag(node, "hasdep", false, false);
      }
      raw.steps.push_back(rawStep);
    }
  }

  // The IR steps a wait on XML step (tb, position) stands for.
  // Algorithm:
  //  1. A real step maps to its IR index.
  //  2. A nop is not stored; waiting on it means "tb has passed that point": the last real step
  //     before it, plus the dependencies of the nops between that step and it (the nop cannot
  //     complete before them). A nop's own dependency on another nop maps to that nop's last
  //     real step only, which keeps this bounded and free of cycles.
  void appendTargets(const std::vector<RawThreadblock>& raw, pugi::xml_node waiter, int tb,
                     int position, bool expandNops, std::vector<StepRef>& out) const {
    const std::vector<RawStep>& steps = raw[tb].steps;
    if (position >= static_cast<int>(steps.size())) {
      fail(waiter, fmt::format("attribute 'deps' has value '{}' but <tb id={}> has only {} steps",
                               position, tb, steps.size()));
    }
    const RawStep& target = steps[position];
    if (!target.nop) {
      out.push_back({tb, target.irIndex});
      return;
    }
    if (target.lastRealBefore >= 0) out.push_back({tb, target.lastRealBefore});
    if (!expandNops) return;
    for (int p = position; p >= 0 && steps[p].nop; --p) {
      if (steps[p].depTb >= 0) {
        appendTargets(raw, steps[p].node, steps[p].depTb, steps[p].depStep, false, out);
      }
    }
  }

  // Folds nops into the next real step's deps, drops same-tb deps, sorts, and marks dependees.
  void resolveDependencies(const std::vector<RawThreadblock>& raw, RankProgram& program) const {
    for (std::size_t t = 0; t < raw.size(); ++t) {
      const int tbId = static_cast<int>(t);
      Threadblock& tb = program.threadblocks[t];
      std::vector<StepRef> pending;
      for (const RawStep& rawStep : raw[t].steps) {
        if (rawStep.depTb >= 0) {
          appendTargets(raw, rawStep.node, rawStep.depTb, rawStep.depStep, true, pending);
        }
        if (rawStep.nop) continue;
        tb.steps[rawStep.irIndex].deps = canonicalDeps(std::move(pending), tbId);
        pending.clear();
      }
      // Trailing nops that still wait on other threadblocks stay as one IR nop step.
      std::vector<StepRef> trailing = canonicalDeps(std::move(pending), tbId);
      if (!trailing.empty()) {
        Step nop;
        nop.op = OpKind::nop;
        nop.deps = std::move(trailing);
        tb.steps.push_back(std::move(nop));
      }
    }
    for (Threadblock& tb : program.threadblocks)
      for (const Step& step : tb.steps)
        for (const StepRef& dep : step.deps)
          program.threadblocks[dep.tb].steps[dep.step].hasDependents = true;
  }

  static std::vector<StepRef> canonicalDeps(std::vector<StepRef> deps, int ownTb) {
    std::erase_if(deps, [ownTb](const StepRef& d) { return d.tb == ownTb; });
    std::sort(deps.begin(), deps.end());
    deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
    return deps;
  }

  std::string_view text_;
  const std::string& source_;
};

// ---------------------------------------------------------------------------------------------
// Writing

// XML steps a step occupies: one per dependency (the extras become nops), at least one.
int xmlWidth(const Step& step) {
  return std::max<int>(1, static_cast<int>(step.deps.size()));
}

// For each tb, the XML `s` of each IR step (the last of the XML steps it occupies).
std::vector<std::vector<int>> xmlPositions(const RankProgram& program) {
  std::vector<std::vector<int>> positions(program.threadblocks.size());
  for (std::size_t t = 0; t < program.threadblocks.size(); ++t) {
    const auto& steps = program.threadblocks[t].steps;
    positions[t].reserve(steps.size());
    int next = 0;
    for (const Step& step : steps) {
      next += xmlWidth(step);
      positions[t].push_back(next - 1);
    }
  }
  return positions;
}

std::string limitContext(const Algorithm& algorithm, int rank, int tb) {
  return fmt::format("cannot write MSCCL XML for '{}': rank {} tb {}", algorithm.name, rank, tb);
}

void checkLimits(const Algorithm& algorithm, const MscclWriteOptions& options) {
  if (options.maxStepsPerThreadblock < 1)
    throw OptionError(
        fmt::format("the MSCCL steps-per-threadblock limit (--msccl-max-steps, "
                    "MscclWriteOptions::maxStepsPerThreadblock) must be at least 1, not {}",
                    options.maxStepsPerThreadblock));
  for (const RankProgram& program : algorithm.ranks) {
    for (const Threadblock& tb : program.threadblocks) {
      if (tb.id > kMaxThreadblockId) {
        throw FormatLimitError(
            fmt::format("{}: threadblock id {} exceeds the MSCCL runtime limit of {} (at most 1024 "
                        "threadblocks per rank)",
                        limitContext(algorithm, program.rank, tb.id), tb.id, kMaxThreadblockId));
      }
      if (tb.channel < 0 || tb.channel > kMaxChannel) {
        throw FormatLimitError(fmt::format(
            "{}: channel {} is outside the MSCCL runtime limit 0..{} (at most 32 channels)",
            limitContext(algorithm, program.rank, tb.id), tb.channel, kMaxChannel));
      }
      long long xmlSteps = 0;
      for (const Step& step : tb.steps)
        xmlSteps += xmlWidth(step);
      if (xmlSteps > options.maxStepsPerThreadblock) {
        throw FormatLimitError(fmt::format(
            "{}: {} XML steps (nops for extra dependencies included) exceed the MSCCL runtime "
            "limit of {} steps per threadblock (MSCCL_MAX_NUM_STEPS); use more threadblocks or "
            "prune dependencies, or raise the limit with --msccl-max-steps N "
            "(MscclWriteOptions::maxStepsPerThreadblock) for an MSCCL executor built with "
            "MSCCL_MAX_NUM_STEPS >= N (its default is 64; the older msccl runtime takes 256), "
            "or write JSON or text instead",
            limitContext(algorithm, program.rank, tb.id), xmlSteps,
            options.maxStepsPerThreadblock));
      }
      for (std::size_t s = 0; s < tb.steps.size(); ++s) {
        const Step& step = tb.steps[s];
        const std::string where =
            fmt::format("{} step {}", limitContext(algorithm, program.rank, tb.id), s);
        if (step.op != OpKind::nop) {
          if (step.count < 1 || step.count > kMaxCount) {
            throw FormatLimitError(fmt::format(
                "{} ({}): cnt {} is outside the MSCCL runtime limit 1..{} (cnt < 72); split the "
                "transfer",
                where, opName(step.op), step.count, kMaxCount));
          }
          for (auto [name, offset] :
               {std::pair{"srcoff", step.srcIndex}, std::pair{"dstoff", step.dstIndex}}) {
            if (offset < 0 || offset > kMaxOffset) {
              throw FormatLimitError(fmt::format(
                  "{} ({}): {} {} is outside the MSCCL runtime limit 0..{} (offsets are int16)",
                  where, opName(step.op), name, offset, kMaxOffset));
            }
          }
        }
        for (const StepRef& dep : step.deps) {
          if (dep.tb > kMaxDependeeTbId) {
            throw FormatLimitError(fmt::format(
                "{} ({}): depends on tb {} step {}, but the MSCCL runtime stores depid as int8 "
                "(dependee threadblock ids must be <= {}); renumber the threadblocks so that "
                "waited-on ones have small ids",
                where, opName(step.op), dep.tb, dep.step, kMaxDependeeTbId));
          }
        }
      }
    }
  }
}

// MSCCL XML names a step's connection only through its <tb> (send, recv, chan): a step that
// names its own peer or channel cannot be written, whatever options.checkLimits says.
void checkNoStepEndpoints(const Algorithm& algorithm) {
  for (const RankProgram& program : algorithm.ranks) {
    for (const Threadblock& tb : program.threadblocks) {
      for (std::size_t s = 0; s < tb.steps.size(); ++s) {
        const Step& step = tb.steps[s];
        if (step.peer == -1 && step.channel == -1) continue;
        std::string named;
        if (step.peer != -1) named = fmt::format("peer {}", step.peer);
        if (step.channel != -1)
          named += fmt::format("{}channel {}", named.empty() ? "" : " / ", step.channel);
        throw FormatLimitError(fmt::format(
            "{} step {} ({}) names {}, but MSCCL XML has no per-step peer or channel (a step "
            "uses its <tb>'s send, recv and chan); write the chorus JSON or text format instead "
            "(--format json or --format text)",
            limitContext(algorithm, program.rank, tb.id), s, opName(step.op), named));
      }
    }
  }
}

void appendStep(std::string& out, int s, const Step& step, bool nop, StepRef dep, int depXml,
                bool hasdep) {
  out += "      <step s=\"";
  appendInt(out, s);
  out += "\" type=\"";
  out += nop ? std::string_view("nop") : opMscclCode(step.op);
  if (nop) {
    out += "\" srcbuf=\"i\" srcoff=\"-1\" dstbuf=\"o\" dstoff=\"-1\" cnt=\"0";
  } else {
    out += "\" srcbuf=\"";
    out += bufferMscclCode(step.srcBuffer);
    out += "\" srcoff=\"";
    appendInt(out, step.srcIndex);
    out += "\" dstbuf=\"";
    out += bufferMscclCode(step.dstBuffer);
    out += "\" dstoff=\"";
    appendInt(out, step.dstIndex);
    out += "\" cnt=\"";
    appendInt(out, step.count);
  }
  out += "\" depid=\"";
  appendInt(out, dep.tb);
  out += "\" deps=\"";
  appendInt(out, dep.tb < 0 ? -1 : depXml);
  out += "\" hasdep=\"";
  out += hasdep ? '1' : '0';
  out += "\"/>\n";
}

// Every op must have an MSCCL `type` code (the op table's mscclCode), limits checked or not.
void requireMscclOps(const Algorithm& algorithm) {
  for (const RankProgram& program : algorithm.ranks)
    for (const Threadblock& tb : program.threadblocks)
      for (std::size_t s = 0; s < tb.steps.size(); ++s)
        if (opMscclCode(tb.steps[s].op).empty())
          throw FormatLimitError(fmt::format(
              "{} step {}: op '{}' has no MSCCL XML form (MSCCL's step types are {}); write "
              "the plan as chorus JSON or the text IR instead (--format json or --format text)",
              limitContext(algorithm, program.rank, tb.id), s, opName(tb.steps[s].op),
              opMscclCodeList()));
}

void appendAlgo(std::string& out, const Algorithm& algorithm, const MscclWriteOptions& options) {
  CHORUS_INTERNAL_ASSERT(static_cast<int>(algorithm.ranks.size()) == algorithm.nranks,
                         "Algorithm::ranks must have nranks entries");
  requireMscclOps(algorithm);
  checkNoStepEndpoints(algorithm);
  if (options.checkLimits) checkLimits(algorithm, options);
  std::string_view coll = collectiveName(algorithm.collective);
  if (options.legacyNames && algorithm.collective == CollectiveKind::reducescatter) {
    coll = "reduce_scatter";
  }
  out += "<algo name=\"";
  appendXmlEscaped(out, algorithm.name);
  out += "\" proto=\"";
  out += protocolName(algorithm.protocol);
  out += "\" nchannels=\"";
  appendInt(out, channelCount(algorithm));
  out += "\" nchunksperloop=\"";
  appendInt(out, algorithm.chunksPerLoop);
  out += "\" ngpus=\"";
  appendInt(out, algorithm.nranks);
  out += "\" coll=\"";
  out += coll;
  if (algorithm.collective == CollectiveKind::custom && !algorithm.customName.empty() &&
      algorithm.customName != algorithm.name) {
    out += "\" custom=\"";
    appendXmlEscaped(out, algorithm.customName);
  }
  out += "\" inplace=\"";
  out += algorithm.inPlace ? '1' : '0';
  out += "\" outofplace=\"";
  out += algorithm.inPlace ? '0' : '1';
  out += "\" minBytes=\"";
  out += std::to_string(algorithm.minBytes);
  out += "\" maxBytes=\"";
  out += std::to_string(algorithm.maxBytes);
  if (algorithm.collective == CollectiveKind::broadcast ||
      algorithm.collective == CollectiveKind::reduce) {
    out += "\" root=\"";
    appendInt(out, algorithm.root);
  }
  out += "\">\n";
  for (const RankProgram& program : algorithm.ranks) {
    const std::vector<std::vector<int>> positions = xmlPositions(program);
    out += "  <gpu id=\"";
    appendInt(out, program.rank);
    out += "\" i_chunks=\"";
    appendInt(out, program.inputChunks);
    out += "\" o_chunks=\"";
    appendInt(out, program.outputChunks);
    out += "\" s_chunks=\"";
    appendInt(out, program.scratchChunks);
    out += "\">\n";
    for (const Threadblock& tb : program.threadblocks) {
      out += "    <tb id=\"";
      appendInt(out, tb.id);
      out += "\" send=\"";
      appendInt(out, tb.sendPeer);
      out += "\" recv=\"";
      appendInt(out, tb.recvPeer);
      out += "\" chan=\"";
      appendInt(out, tb.channel);
      out += "\">\n";
      int s = 0;
      auto xmlOf = [&](StepRef dep) {
        CHORUS_INTERNAL_ASSERT(dep.tb >= 0 && dep.tb < static_cast<int>(positions.size()) &&
                                   dep.step >= 0 &&
                                   dep.step < static_cast<int>(positions[dep.tb].size()),
                               fmt::format("rank {} tb {}: dependency ({},{}) out of range",
                                           program.rank, tb.id, dep.tb, dep.step));
        return positions[dep.tb][dep.step];
      };
      for (const Step& step : tb.steps) {
        for (std::size_t d = 1; d < step.deps.size(); ++d) {
          appendStep(out, s++, step, true, step.deps[d], xmlOf(step.deps[d]), false);
        }
        const StepRef first = step.deps.empty() ? StepRef{} : step.deps.front();
        appendStep(out, s++, step, step.op == OpKind::nop, first, first.tb < 0 ? -1 : xmlOf(first),
                   step.hasDependents);
      }
      out += "    </tb>\n";
    }
    out += "  </gpu>\n";
  }
  out += "</algo>\n";
}

}  // namespace

std::vector<Algorithm> readMscclXml(std::string_view text, const std::string& sourceName) {
  return XmlReader(text, sourceName).read();
}

std::vector<Algorithm> readMscclXmlFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ParseError(fmt::format("{}: cannot open file: {}", path, std::strerror(errno)));
  std::ostringstream contents;
  contents << in.rdbuf();
  if (in.bad()) throw ParseError(fmt::format("{}: cannot read file", path));
  return readMscclXml(contents.str(), path);
}

std::string writeMscclXml(const Algorithm& algorithm, const MscclWriteOptions& options) {
  std::string out;
  out.reserve(160 * stepCount(algorithm) + 4096);
  appendAlgo(out, algorithm, options);
  return out;
}

std::string writeMscclXml(const std::vector<Algorithm>& algorithms,
                          const MscclWriteOptions& options) {
  std::string out;
  for (const Algorithm& algorithm : algorithms)
    appendAlgo(out, algorithm, options);
  return out;
}

}  // namespace chorus::ir
