#include "ir/text_format.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "support/error.h"
#include "support/strings.h"

namespace chorus::ir {
namespace {

// ---------------------------------------------------------------------------------------------
// Printing

void appendQuoted(std::string& out, std::string_view text) {
  out += '"';
  for (char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        out += c;
    }
  }
  out += '"';
}

void appendTextLocation(std::string& out, BufferKind buffer, int index) {
  out += bufferName(buffer);
  out += '[';
  appendInt(out, index);
  out += ']';
}

// ---------------------------------------------------------------------------------------------
// Parsing

std::optional<long long> parseTextInteger(std::string_view text) {
  long long value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

std::optional<std::uint64_t> parseTextUnsigned(std::string_view text) {
  std::uint64_t value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

bool isSpace(char c) {
  return c == ' ' || c == '\t' || c == '\r';
}

class TextParser {
 public:
  TextParser(std::string_view text, const std::string& sourceName)
      : text_(text), source_(sourceName) {}

  Algorithm parse() {
    std::size_t pos = 0;
    while (pos <= text_.size()) {
      std::size_t end = text_.find('\n', pos);
      if (end == std::string_view::npos) end = text_.size();
      ++line_;
      parseLine(text_.substr(pos, end - pos));
      pos = end + 1;
    }
    if (!sawHeader_) {
      throw ParseError(
          fmt::format("{}: no 'algorithm' line found (expected the chorus text IR)", source_));
    }
    if (static_cast<int>(algorithm_.ranks.size()) != algorithm_.nranks) {
      fail(fmt::format("the header says ranks={} but {} 'rank' lines follow", algorithm_.nranks,
                       algorithm_.ranks.size()));
    }
    checkDependencies();
    return std::move(algorithm_);
  }

 private:
  [[noreturn]] void failAt(int line, const std::string& what) const {
    throw ParseError(fmt::format("{}:{}: {}", source_, line, what));
  }
  [[noreturn]] void fail(const std::string& what) const { failAt(line_, what); }

  // Splits on blanks; a double-quoted string (with backslash escapes) stays inside its token.
  void tokenize(std::string_view line) {
    tokens_.clear();
    std::size_t i = 0;
    while (i < line.size()) {
      while (i < line.size() && isSpace(line[i]))
        ++i;
      if (i >= line.size()) break;
      const std::size_t start = i;
      while (i < line.size() && !isSpace(line[i])) {
        if (line[i] == '"') {
          ++i;
          while (i < line.size() && line[i] != '"')
            i += line[i] == '\\' ? 2 : 1;
          if (i >= line.size()) fail("unterminated string (missing closing '\"')");
        }
        ++i;
      }
      tokens_.push_back(line.substr(start, i - start));
    }
  }

  std::string unquote(std::string_view token, std::string_view what) const {
    if (token.size() < 2 || token.front() != '"' || token.back() != '"') {
      fail(fmt::format("{} must be a double-quoted string, got '{}'", what, token));
    }
    std::string out;
    for (std::size_t i = 1; i + 1 < token.size(); ++i) {
      char c = token[i];
      if (c == '\\') {
        char next = token[++i];
        switch (next) {
          case 'n':
            out += '\n';
            break;
          case 'r':
            out += '\r';
            break;
          case 't':
            out += '\t';
            break;
          case '"':
          case '\\':
            out += next;
            break;
          default:
            fail(fmt::format("unknown escape '\\{}' in {}", next, what));
        }
      } else {
        out += c;
      }
    }
    return out;
  }

  long long integer(std::string_view text, std::string_view what, long long lo,
                    long long hi) const {
    auto value = parseTextInteger(text);
    if (!value) fail(fmt::format("{} has value '{}' (expected an integer)", what, text));
    if (*value < lo || *value > hi) {
      fail(fmt::format("{} has value '{}' (expected an integer in {}..{})", what, text, lo, hi));
    }
    return *value;
  }

  // key=value tokens after the fixed ones; every key in `keys` at most once.
  struct KeyValue {
    std::string_view key;
    std::string_view value;
  };
  std::vector<KeyValue> keyValues(std::size_t first, std::initializer_list<std::string_view> keys,
                                  std::string_view lineKind) const {
    std::vector<KeyValue> out;
    for (std::size_t t = first; t < tokens_.size(); ++t) {
      const std::string_view token = tokens_[t];
      const std::size_t eq = token.find('=');
      if (eq == std::string_view::npos) {
        fail(fmt::format("unexpected '{}' in a '{}' line (expected key=value)", token, lineKind));
      }
      const std::string_view key = token.substr(0, eq);
      if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
        std::string names;
        for (std::string_view k : keys)
          names += (names.empty() ? "" : ", ") + std::string(k);
        fail(fmt::format("unknown key '{}' in a '{}' line (expected {})", key, lineKind, names));
      }
      for (const KeyValue& kv : out)
        if (kv.key == key) fail(fmt::format("key '{}' appears twice", key));
      out.push_back({key, token.substr(eq + 1)});
    }
    return out;
  }

  static std::optional<std::string_view> lookup(const std::vector<KeyValue>& kvs,
                                                std::string_view key) {
    for (const KeyValue& kv : kvs)
      if (kv.key == key) return kv.value;
    return std::nullopt;
  }

  std::string_view requiredKey(const std::vector<KeyValue>& kvs, std::string_view key,
                               std::string_view lineKind) const {
    auto value = lookup(kvs, key);
    if (!value) fail(fmt::format("the '{}' line lacks '{}='", lineKind, key));
    return *value;
  }

  void parseLine(std::string_view line) {
    std::size_t first = 0;
    while (first < line.size() && isSpace(line[first]))
      ++first;
    if (first == line.size() || line[first] == '#') return;
    tokenize(line);
    const std::string_view head = tokens_[0];
    if (head == "algorithm") return parseHeader();
    if (!sawHeader_) fail(fmt::format("expected the 'algorithm' line first, got '{}'", head));
    if (head == "rank") return parseRank();
    if (head == "tb") return parseThreadblock();
    if (head.back() == ':') return parseStep();
    fail(fmt::format("unexpected '{}' (expected 'rank', 'tb' or a step 'N: op ...')", head));
  }

  void parseHeader() {
    if (sawHeader_) fail("a second 'algorithm' line (a text holds one algorithm)");
    sawHeader_ = true;
    if (tokens_.size() < 2) fail("the 'algorithm' line lacks the quoted name");
    algorithm_.name = unquote(tokens_[1], "the algorithm name");
    const auto kvs = keyValues(2,
                               {"collective", "protocol", "inplace", "ranks", "chunks", "minBytes",
                                "maxBytes", "root", "custom"},
                               "algorithm");
    const std::string_view coll = requiredKey(kvs, "collective", "algorithm");
    auto kind = parseCollectiveName(coll);
    if (!kind) {
      fail(
          fmt::format("collective has unknown value '{}' (expected one of allreduce, allgather, "
                      "reducescatter, alltoall, broadcast, reduce, custom)",
                      coll));
    }
    algorithm_.collective = *kind;
    const std::string_view proto = requiredKey(kvs, "protocol", "algorithm");
    auto protocol = parseProtocolName(proto);
    if (!protocol) {
      fail(fmt::format("protocol has unknown value '{}' (expected one of Simple, LL, LL128)",
                       proto));
    }
    algorithm_.protocol = *protocol;
    algorithm_.inPlace = integer(requiredKey(kvs, "inplace", "algorithm"), "inplace", 0, 1) == 1;
    const long long kMax = std::numeric_limits<int>::max();
    algorithm_.nranks =
        static_cast<int>(integer(requiredKey(kvs, "ranks", "algorithm"), "ranks", 1, kMax));
    algorithm_.chunksPerLoop =
        static_cast<int>(integer(requiredKey(kvs, "chunks", "algorithm"), "chunks", 0, kMax));
    for (auto [key, target] : {std::pair{"minBytes", &algorithm_.minBytes},
                               std::pair{"maxBytes", &algorithm_.maxBytes}}) {
      if (auto value = lookup(kvs, key)) {
        auto parsed = parseTextUnsigned(*value);
        if (!parsed) {
          fail(fmt::format("{} has value '{}' (expected a non-negative integer)", key, *value));
        }
        *target = *parsed;
      }
    }
    if (auto root = lookup(kvs, "root")) {
      algorithm_.root = static_cast<int>(integer(*root, "root", 0, algorithm_.nranks - 1));
    }
    if (auto custom = lookup(kvs, "custom")) {
      algorithm_.customName = unquote(*custom, "custom");
    }
  }

  void parseRank() {
    const int expected = static_cast<int>(algorithm_.ranks.size());
    if (tokens_.size() < 2) fail("the 'rank' line lacks the rank number");
    const int rank = static_cast<int>(
        integer(tokens_[1], "the rank number", 0, std::numeric_limits<int>::max()));
    if (rank != expected) {
      fail(
          fmt::format("rank {} found where rank {} was expected (ranks are listed in order "
                      "from 0)",
                      rank, expected));
    }
    if (rank >= algorithm_.nranks) {
      fail(fmt::format("rank {} is out of range (the header says ranks={})", rank,
                       algorithm_.nranks));
    }
    const auto kvs = keyValues(2, {"input", "output", "scratch"}, "rank");
    RankProgram program;
    program.rank = rank;
    const long long kMax = std::numeric_limits<int>::max();
    program.inputChunks =
        static_cast<int>(integer(requiredKey(kvs, "input", "rank"), "input", 0, kMax));
    program.outputChunks =
        static_cast<int>(integer(requiredKey(kvs, "output", "rank"), "output", 0, kMax));
    program.scratchChunks =
        static_cast<int>(integer(requiredKey(kvs, "scratch", "rank"), "scratch", 0, kMax));
    algorithm_.ranks.push_back(std::move(program));
    stepLines_.emplace_back();
  }

  void parseThreadblock() {
    if (algorithm_.ranks.empty()) fail("a 'tb' line before any 'rank' line");
    RankProgram& program = algorithm_.ranks.back();
    const int expected = static_cast<int>(program.threadblocks.size());
    if (tokens_.size() < 2) fail("the 'tb' line lacks the threadblock id");
    const int id = static_cast<int>(
        integer(tokens_[1], "the threadblock id", 0, std::numeric_limits<int>::max()));
    if (id != expected) {
      fail(
          fmt::format("tb {} found where tb {} was expected (ids are contiguous from 0, in "
                      "order)",
                      id, expected));
    }
    const auto kvs = keyValues(2, {"send", "recv", "channel"}, "tb");
    Threadblock tb;
    tb.id = id;
    const int lastRank = algorithm_.nranks - 1;
    tb.sendPeer = static_cast<int>(integer(requiredKey(kvs, "send", "tb"), "send", -1, lastRank));
    tb.recvPeer = static_cast<int>(integer(requiredKey(kvs, "recv", "tb"), "recv", -1, lastRank));
    tb.channel = static_cast<int>(
        integer(requiredKey(kvs, "channel", "tb"), "channel", 0, std::numeric_limits<int>::max()));
    program.threadblocks.push_back(std::move(tb));
    stepLines_.back().emplace_back();
  }

  // "input[3]"
  void parseLocation(std::string_view token, std::string_view what, BufferKind& buffer,
                     int& index) const {
    const std::size_t open = token.find('[');
    if (open == std::string_view::npos || token.back() != ']') {
      fail(fmt::format("{} '{}' is not of the form buffer[index] (e.g. input[3])", what, token));
    }
    auto kind = parseBufferName(token.substr(0, open));
    if (!kind) {
      fail(fmt::format("{} '{}' names an unknown buffer (expected input, output or scratch)", what,
                       token));
    }
    buffer = *kind;
    index = static_cast<int>(integer(token.substr(open + 1, token.size() - open - 2), what, 0,
                                     std::numeric_limits<int>::max()));
  }

  // A step's "peer=" or "channel=" value: -1 (the threadblock's, as when absent) or 0..hi.
  int endpoint(std::string_view text, const std::string& stepName, std::string_view key,
               long long hi, std::string_view accepted) const {
    auto value = parseTextInteger(text);
    if (!value || (*value != -1 && (*value < 0 || *value > hi))) {
      fail(fmt::format("{}: {} has value '{}' (expected {})", stepName, key, text, accepted));
    }
    return static_cast<int>(*value);
  }

  // "(1,2),(3,4)"
  std::vector<StepRef> parseDeps(std::string_view text) const {
    std::vector<StepRef> deps;
    std::size_t i = 0;
    while (i < text.size()) {
      if (text[i] != '(') break;
      const std::size_t comma = text.find(',', i);
      const std::size_t close = text.find(')', i);
      if (comma == std::string_view::npos || close == std::string_view::npos || comma > close) {
        break;
      }
      StepRef ref;
      ref.tb = static_cast<int>(integer(text.substr(i + 1, comma - i - 1), "a dependency's tb", 0,
                                        std::numeric_limits<int>::max()));
      ref.step =
          static_cast<int>(integer(text.substr(comma + 1, close - comma - 1), "a dependency's step",
                                   0, std::numeric_limits<int>::max()));
      deps.push_back(ref);
      i = close + 1;
      if (i == text.size()) {
        std::sort(deps.begin(), deps.end());
        deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
        return deps;
      }
      if (text[i] != ',') break;
      ++i;
    }
    fail(fmt::format("deps '{}' is not of the form (tb,step),(tb,step)...", text));
  }

  void parseStep() {
    if (algorithm_.ranks.empty() || algorithm_.ranks.back().threadblocks.empty()) {
      fail("a step line before any 'tb' line");
    }
    Threadblock& tb = algorithm_.ranks.back().threadblocks.back();
    const std::string_view indexText = tokens_[0].substr(0, tokens_[0].size() - 1);
    const long long index =
        integer(indexText, "the step index", 0, std::numeric_limits<int>::max());
    if (index != static_cast<long long>(tb.steps.size())) {
      fail(
          fmt::format("step {} found where step {} was expected (steps are numbered from 0, in "
                      "order)",
                      index, tb.steps.size()));
    }
    if (tokens_.size() < 5 || tokens_[3] != "->") {
      fail(
          "a step line must read 'N: op src[i] -> dst[j] count=C [deps=(tb,step),...] "
          "[hasdep]'");
    }
    Step step;
    auto op = parseOpName(tokens_[1]);
    if (!op) {
      fail(fmt::format("unknown op '{}' (expected one of {})", tokens_[1], opNameList()));
    }
    step.op = *op;
    parseLocation(tokens_[2], "the source", step.srcBuffer, step.srcIndex);
    parseLocation(tokens_[4], "the destination", step.dstBuffer, step.dstIndex);
    bool sawCount = false;
    bool sawDeps = false;
    bool sawPeer = false;
    bool sawChannel = false;
    const std::string stepName =
        fmt::format("rank {} tb {} step {}", algorithm_.ranks.size() - 1,
                    algorithm_.ranks.back().threadblocks.size() - 1, index);
    for (std::size_t t = 5; t < tokens_.size(); ++t) {
      const std::string_view token = tokens_[t];
      if (token == "hasdep") {
        if (step.hasDependents) fail("'hasdep' appears twice");
        step.hasDependents = true;
      } else if (token.starts_with("count=")) {
        if (sawCount) fail("key 'count' appears twice");
        sawCount = true;
        step.count =
            static_cast<int>(integer(token.substr(6), "count", 0, std::numeric_limits<int>::max()));
      } else if (token.starts_with("peer=")) {
        if (sawPeer) fail("key 'peer' appears twice");
        sawPeer = true;
        step.peer = endpoint(token.substr(5), stepName, "peer", algorithm_.nranks - 1,
                             fmt::format("-1 for the threadblock's peer, or a rank in 0..{}",
                                         algorithm_.nranks - 1));
      } else if (token.starts_with("channel=")) {
        if (sawChannel) fail("key 'channel' appears twice");
        sawChannel = true;
        step.channel =
            endpoint(token.substr(8), stepName, "channel", std::numeric_limits<int>::max(),
                     "-1 for the threadblock's channel, or a channel >= 0");
      } else if (token.starts_with("deps=")) {
        if (sawDeps) fail("key 'deps' appears twice");
        sawDeps = true;
        step.deps = parseDeps(token.substr(5));
      } else {
        fail(fmt::format(
            "unexpected '{}' in a step line (expected count=, peer=, channel=, deps= or hasdep)",
            token));
      }
    }
    if (!sawCount) fail("the step line lacks 'count='");
    tb.steps.push_back(std::move(step));
    stepLines_.back().back().push_back(line_);
  }

  void checkDependencies() const {
    for (std::size_t r = 0; r < algorithm_.ranks.size(); ++r) {
      const RankProgram& program = algorithm_.ranks[r];
      const int ntb = static_cast<int>(program.threadblocks.size());
      for (int t = 0; t < ntb; ++t) {
        const auto& steps = program.threadblocks[t].steps;
        for (std::size_t s = 0; s < steps.size(); ++s) {
          for (const StepRef& dep : steps[s].deps) {
            const int line = stepLines_[r][t][s];
            if (dep.tb == t) {
              failAt(line, fmt::format("rank {} tb {} step {}: depends on its own threadblock "
                                       "(deps are cross-threadblock waits)",
                                       r, t, s));
            }
            if (dep.tb >= ntb) {
              failAt(line, fmt::format("rank {} tb {} step {}: depends on tb {}, but rank {} has "
                                       "{} threadblocks",
                                       r, t, s, dep.tb, r, ntb));
            }
            const auto size = program.threadblocks[dep.tb].steps.size();
            if (dep.step >= static_cast<int>(size)) {
              failAt(line, fmt::format("rank {} tb {} step {}: depends on step {} of tb {}, which "
                                       "has {} steps",
                                       r, t, s, dep.step, dep.tb, size));
            }
          }
        }
      }
    }
  }

  std::string_view text_;
  const std::string& source_;
  int line_ = 0;
  bool sawHeader_ = false;
  Algorithm algorithm_;
  std::vector<std::string_view> tokens_;
  std::vector<std::vector<std::vector<int>>> stepLines_;  // [rank][tb][step] -> line
};

}  // namespace

std::string printText(const Algorithm& algorithm) {
  std::string out;
  out.reserve(80 * stepCount(algorithm) + 256);
  out += "algorithm ";
  appendQuoted(out, algorithm.name);
  out += " collective=";
  out += collectiveName(algorithm.collective);
  out += " protocol=";
  out += protocolName(algorithm.protocol);
  out += " inplace=";
  out += algorithm.inPlace ? '1' : '0';
  out += " ranks=";
  appendInt(out, algorithm.nranks);
  out += " chunks=";
  appendInt(out, algorithm.chunksPerLoop);
  out += " minBytes=";
  out += std::to_string(algorithm.minBytes);
  out += " maxBytes=";
  out += std::to_string(algorithm.maxBytes);
  out += " root=";
  appendInt(out, algorithm.root);
  out += " custom=";
  appendQuoted(out, algorithm.customName);
  out += '\n';
  for (const RankProgram& program : algorithm.ranks) {
    out += "rank ";
    appendInt(out, program.rank);
    out += " input=";
    appendInt(out, program.inputChunks);
    out += " output=";
    appendInt(out, program.outputChunks);
    out += " scratch=";
    appendInt(out, program.scratchChunks);
    out += '\n';
    for (const Threadblock& tb : program.threadblocks) {
      out += "  tb ";
      appendInt(out, tb.id);
      out += " send=";
      appendInt(out, tb.sendPeer);
      out += " recv=";
      appendInt(out, tb.recvPeer);
      out += " channel=";
      appendInt(out, tb.channel);
      out += '\n';
      for (std::size_t s = 0; s < tb.steps.size(); ++s) {
        const Step& step = tb.steps[s];
        out += "    ";
        appendInt(out, static_cast<long long>(s));
        out += ": ";
        out += opName(step.op);
        out += ' ';
        appendTextLocation(out, step.srcBuffer, step.srcIndex);
        out += " -> ";
        appendTextLocation(out, step.dstBuffer, step.dstIndex);
        out += " count=";
        appendInt(out, step.count);
        // Only when set, so plans without one-sided steps print as they always did.
        if (step.peer != -1) {
          out += " peer=";
          appendInt(out, step.peer);
        }
        if (step.channel != -1) {
          out += " channel=";
          appendInt(out, step.channel);
        }
        if (!step.deps.empty()) {
          out += " deps=";
          for (std::size_t d = 0; d < step.deps.size(); ++d) {
            if (d) out += ',';
            out += '(';
            appendInt(out, step.deps[d].tb);
            out += ',';
            appendInt(out, step.deps[d].step);
            out += ')';
          }
        }
        if (step.hasDependents) out += " hasdep";
        out += '\n';
      }
    }
  }
  return out;
}

Algorithm parseText(std::string_view text, const std::string& sourceName) {
  return TextParser(text, sourceName).parse();
}

}  // namespace chorus::ir
