#include "ir/formats.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ir/dot_format.h"
#include "ir/json_format.h"
#include "ir/msccl_xml.h"
#include "ir/mscclpp_plan.h"
#include "ir/mscclpp_plan_writer.h"
#include "ir/text_format.h"
#include "support/error.h"

namespace chorus::ir {
namespace {

constexpr std::string_view kMscclppPlanName = "MSCCL++ execution plan";

constexpr std::string_view kAcceptedFormats =
    "chorus reads MSCCL XML (<algo> elements), chorus JSON (an object with \"format\": "
    "\"chorus-ir\"), MSCCL++ execution plans (an object with \"gpus\" whose threadblocks have "
    "\"ops\") and the chorus text IR (an 'algorithm' line first; '#' comments may precede it)";

std::string lowercase(std::string_view text) {
  std::string out(text);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

bool isBlankChar(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

std::string_view skipBlanks(std::string_view text) {
  const std::size_t first = text.find_first_not_of(" \t\r\n");
  return first == std::string_view::npos ? std::string_view() : text.substr(first);
}

std::string_view skipLeadingBlanks(std::string_view text) {
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);  // UTF-8 byte order mark
  return skipBlanks(text);
}

// The first word of `text` (up to a blank or `stop`).
std::string_view firstWord(std::string_view text, std::string_view stop = "") {
  std::size_t end = 0;
  while (end < text.size() && !isBlankChar(text[end]) && stop.find(text[end]) == stop.npos)
    ++end;
  return text.substr(0, end);
}

// The first line of `body` that is neither blank nor a '#' comment, without leading blanks;
// empty when there is none.
std::string_view firstContentLine(std::string_view body) {
  while (!body.empty()) {
    const std::size_t end = std::min(body.find('\n'), body.size());
    const std::string_view line = skipBlanks(body.substr(0, end));
    if (!line.empty() && line.front() != '#') return line;
    body.remove_prefix(std::min(end + 1, body.size()));
  }
  return {};
}

// ---------------------------------------------------------------------------------------------
// XML: the first element after the prolog (declaration, processing instructions, comments,
// DOCTYPE).

std::string_view skipXmlProlog(std::string_view body) {
  for (;;) {
    body = skipBlanks(body);
    std::string_view close;
    if (body.starts_with("<?")) {
      close = "?>";
    } else if (body.starts_with("<!--")) {
      close = "-->";
    } else if (body.starts_with("<!")) {
      // <!DOCTYPE ...>, possibly with an internal subset [ ... ].
      const std::size_t bracket = body.find('[');
      close = bracket != std::string_view::npos && bracket < body.find('>') ? "]>" : ">";
    } else {
      return body;
    }
    const std::size_t end = body.find(close, 2);
    if (end == std::string_view::npos) return {};
    body.remove_prefix(end + close.size());
  }
}

// "algo" for "<algo name=...>"; empty when `xml` does not start with an element.
std::string_view xmlElementName(std::string_view xml) {
  if (!xml.starts_with('<')) return {};
  return firstWord(xml.substr(1), "/>");
}

bool matchesMscclXml(std::string_view body) {
  return xmlElementName(skipXmlProlog(body)) == "algo";
}

// ---------------------------------------------------------------------------------------------
// JSON: an outline of the top level, read with a SAX pass (no document is built).

struct JsonOutline {
  char top = 0;                       // '{' object, '[' array, 's' scalar; 0 if none was read
  std::vector<std::string> keys;      // the top-level object's keys, in order
  std::optional<std::string> format;  // its "format" member, when a string
  bool gpuThreadblockOps = false;     // some gpus[i].threadblocks[j] has "ops" (MSCCL++)
  std::string error;                  // the parser's message when the text is malformed
};

class JsonOutliner : public nlohmann::json_sax<nlohmann::json> {
 public:
  JsonOutliner(JsonOutline& outline, bool stopAtFormat)
      : outline_(outline), stopAtFormat_(stopAtFormat) {}

  bool null() override { return scalar(); }
  bool boolean(bool) override { return scalar(); }
  bool number_integer(number_integer_t) override { return scalar(); }
  bool number_unsigned(number_unsigned_t) override { return scalar(); }
  bool number_float(number_float_t, const string_t&) override { return scalar(); }
  bool binary(binary_t&) override { return scalar(); }
  bool string(string_t& value) override {
    if (containers_.size() == 1 && containers_.back().kind == '{' && key_ == "format") {
      outline_.format = value;
      if (stopAtFormat_) return false;  // all the chorus JSON probe needs
    }
    return scalar();
  }
  bool start_object(std::size_t) override { return enter('{'); }
  bool start_array(std::size_t) override { return enter('['); }
  bool end_object() override { return leave(); }
  bool end_array() override { return leave(); }
  bool key(string_t& name) override {
    if (containers_.size() == 1) outline_.keys.push_back(name);
    // gpus[i].threadblocks[j].ops: containers root{, gpus[, gpu{, threadblocks[, tb{.
    if (name == "ops" && containers_.size() == 5 && containers_[1].name == "gpus" &&
        containers_[3].name == "threadblocks" && containers_[4].kind == '{')
      outline_.gpuThreadblockOps = true;
    key_ = std::move(name);
    return true;
  }
  bool parse_error(std::size_t, const std::string&,
                   const nlohmann::detail::exception& error) override {
    outline_.error = error.what();
    return false;
  }

 private:
  struct Container {
    char kind;         // '{' or '['
    std::string name;  // the key it is the value of; "" for the top level and array elements
  };

  bool scalar() {
    if (containers_.empty()) outline_.top = 's';
    return true;
  }
  bool enter(char kind) {
    if (containers_.empty()) outline_.top = kind;
    const bool member = !containers_.empty() && containers_.back().kind == '{';
    containers_.push_back({kind, member ? key_ : std::string()});
    return true;
  }
  bool leave() {
    if (!containers_.empty()) containers_.pop_back();
    return true;
  }

  JsonOutline& outline_;
  const bool stopAtFormat_;
  std::vector<Container> containers_;
  std::string key_;
};

// `stopAtFormat`: stop reading at the top-level "format" member (all that chorus JSON's probe
// needs; a chorus JSON file starts with it).
JsonOutline outlineJson(std::string_view body, bool stopAtFormat) {
  JsonOutline outline;
  JsonOutliner outliner(outline, stopAtFormat);
  try {
    nlohmann::json::sax_parse(body.begin(), body.end(), &outliner);
  } catch (const std::exception& error) {  // the SAX interface reports errors; be safe anyway
    if (outline.error.empty()) outline.error = error.what();
  }
  return outline;
}

bool looksLikeJson(std::string_view body) {
  return body.starts_with('{') || body.starts_with('[');
}

bool matchesChorusJson(std::string_view body) {
  if (!body.starts_with('{')) return false;
  return outlineJson(body, true).format == kChorusJsonFormat;
}

bool hasKey(const JsonOutline& outline, std::string_view key) {
  return std::find(outline.keys.begin(), outline.keys.end(), key) != outline.keys.end();
}

// MSCCL++ execution plans (microsoft/mscclpp, test/execution-files/*.json): an object with
// "name", "collective", "protocol", "inplace", "gpus" (each with "id", "threadblocks" (each
// with "ops"), chunk counts, "channels"), "num_threads_per_block", ...
bool matchesMscclppPlan(std::string_view body) {
  if (!body.starts_with('{')) return false;
  const JsonOutline outline = outlineJson(body, false);
  if (outline.format || !hasKey(outline, "gpus")) return false;
  return outline.gpuThreadblockOps || hasKey(outline, "num_threads_per_block");
}

// ---------------------------------------------------------------------------------------------
// Text IR and DOT

bool matchesTextIr(std::string_view body) {
  return firstWord(firstContentLine(body)) == "algorithm";
}

// DOT: [strict] (di)graph, after '#', '//' and '/* */' comments.
bool matchesDot(std::string_view body) {
  for (;;) {
    body = skipBlanks(body);
    if (body.starts_with('#') || body.starts_with("//")) {
      const std::size_t end = body.find('\n');
      if (end == std::string_view::npos) return false;
      body.remove_prefix(end + 1);
    } else if (body.starts_with("/*")) {
      const std::size_t end = body.find("*/", 2);
      if (end == std::string_view::npos) return false;
      body.remove_prefix(end + 2);
    } else {
      break;
    }
  }
  std::string word = lowercase(firstWord(body, "{\""));
  if (word == "strict") word = lowercase(firstWord(skipBlanks(body.substr(6)), "{\""));
  return word == "digraph" || word == "graph";
}

// ---------------------------------------------------------------------------------------------
// The probes, in order: the first that matches reads the input (or refuses it).

std::vector<Algorithm> readXmlInput(std::string_view text, const std::string& sourceName) {
  return readMscclXml(text, sourceName);
}

std::vector<Algorithm> readJsonInput(std::string_view text, const std::string& sourceName) {
  return {readJson(text, sourceName)};
}

std::vector<Algorithm> readTextInput(std::string_view text, const std::string& sourceName) {
  return {parseText(text, sourceName)};
}

std::vector<Algorithm> readMscclppInput(std::string_view text, const std::string& sourceName) {
  return {readMscclppPlan(text, sourceName)};
}

[[noreturn]] std::vector<Algorithm> refuseDot(std::string_view, const std::string& sourceName) {
  throw ParseError(fmt::format(
      "{}: unrecognized format: this is a DOT graph ('digraph'); DOT is output only (chorus "
      "writes it with --format dot for pictures and cannot read it back). {}",
      sourceName, kAcceptedFormats));
}

struct FormatProbe {
  std::string_view name;
  bool (*matches)(std::string_view body);  // body: the input without leading blanks and BOM
  // Reads an input the probe matched (the whole text, so that lines count right); formats
  // chorus recognises but does not read throw their refusal instead.
  std::vector<Algorithm> (*read)(std::string_view text, const std::string& sourceName);
};

constexpr FormatProbe kFormatProbes[] = {
    {"MSCCL XML", matchesMscclXml, readXmlInput},
    {"chorus JSON", matchesChorusJson, readJsonInput},
    {kMscclppPlanName, matchesMscclppPlan, readMscclppInput},
    {"chorus text IR", matchesTextIr, readTextInput},
    {"DOT", matchesDot, refuseDot},
};

const FormatProbe* findProbe(std::string_view body) {
  for (const FormatProbe& probe : kFormatProbes)
    if (probe.matches(body)) return &probe;
  return nullptr;
}

// "\"a\", \"b\", \"c\" and 4 more"
std::string listKeys(const std::vector<std::string>& keys) {
  constexpr std::size_t kListed = 6;
  std::string out;
  for (std::size_t i = 0; i < keys.size() && i < kListed; ++i)
    out += fmt::format("{}\"{}\"", i ? ", " : "", keys[i]);
  if (keys.size() > kListed) out += fmt::format(" and {} more", keys.size() - kListed);
  return out;
}

// What JSON that no probe took looks like.
std::string describeJson(const JsonOutline& outline) {
  if (outline.top == '[') return "a JSON array";
  if (outline.format) {
    if (*outline.format == "chorus-topology/1")
      return "a chorus topology file (\"format\": \"chorus-topology/1\"); pass it to --topology";
    if (*outline.format == "chorus-tuning/1")
      return "a chorus tuning table (\"format\": \"chorus-tuning/1\"); use it as "
             "CHORUS_TUNING_FILE";
    return fmt::format("a JSON object whose \"format\" is \"{}\", not \"{}\"", *outline.format,
                       kChorusJsonFormat);
  }
  if (outline.keys.empty()) return "an empty JSON object";
  return fmt::format(
      "a JSON object with the top-level keys {}: neither chorus JSON (no \"format\": \"{}\") nor "
      "an {} (no \"gpus\" with \"threadblocks\" of \"ops\")",
      listKeys(outline.keys), kChorusJsonFormat, kMscclppPlanName);
}

// What XML that no probe took looks like.
std::string describeXml(std::string_view body) {
  const std::string_view element = xmlElementName(skipXmlProlog(body));
  if (element.empty()) return "XML without an element";
  return fmt::format("XML whose first element is <{}>, not MSCCL XML (<algo> elements)", element);
}

[[noreturn]] void refuseUnrecognized(std::string_view body, const std::string& sourceName) {
  std::string what;
  if (looksLikeJson(body)) {
    const JsonOutline outline = outlineJson(body, false);
    if (!outline.error.empty())
      throw ParseError(
          fmt::format("{}: malformed JSON: {} ({})", sourceName, outline.error, kAcceptedFormats));
    what = describeJson(outline);
  } else if (body.starts_with('<')) {
    what = describeXml(body);
  } else if (const std::string_view line = firstContentLine(body); line.empty()) {
    what = "only '#' comments";
  } else {
    const std::string_view start = line.substr(0, line.find_last_not_of(" \t\r") + 1);
    what = fmt::format("text starting with '{}'{}", start.substr(0, 20),
                       body.starts_with('#') ? " after its comments" : "");
  }
  throw ParseError(fmt::format("{}: unrecognized format: the input is {}. {}", sourceName, what,
                               kAcceptedFormats));
}

}  // namespace

std::optional<Format> parseFormatName(std::string_view name) {
  const std::string l = lowercase(name);
  if (l == "xml") return Format::xml;
  if (l == "json") return Format::json;
  if (l == "text" || l == "txt") return Format::text;
  if (l == "dot") return Format::dot;
  if (l == "mscclpp-json") return Format::mscclppJson;
  return std::nullopt;
}

std::optional<std::string_view> detectFormat(std::string_view text) {
  const FormatProbe* probe = findProbe(skipLeadingBlanks(text));
  if (probe == nullptr) return std::nullopt;
  return probe->name;
}

std::vector<Algorithm> readAlgorithms(std::string_view text, const std::string& sourceName) {
  const std::string_view body = skipLeadingBlanks(text);
  if (body.empty()) {
    throw ParseError(fmt::format("{}: the input is empty ({})", sourceName, kAcceptedFormats));
  }
  if (const FormatProbe* probe = findProbe(body)) return probe->read(text, sourceName);
  refuseUnrecognized(body, sourceName);
}

std::vector<Algorithm> readAlgorithmsFile(const std::string& path) {
  if (path == "-") {
    std::string contents((std::istreambuf_iterator<char>(std::cin)),
                         std::istreambuf_iterator<char>());
    if (std::cin.bad()) throw ParseError("<stdin>: cannot read standard input");
    return readAlgorithms(contents, "<stdin>");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ParseError(fmt::format("{}: cannot open file: {}", path, std::strerror(errno)));
  std::ostringstream contents;
  contents << in.rdbuf();
  if (in.bad()) throw ParseError(fmt::format("{}: cannot read file", path));
  return readAlgorithms(contents.str(), path);
}

namespace {
std::string_view writtenFormatName(Format format) {
  switch (format) {
    case Format::xml:
      return "MSCCL XML";
    case Format::json:
      return "chorus JSON";
    case Format::text:
      return "chorus text";
    case Format::mscclppJson:
      return "MSCCL++ JSON";
    case Format::dot:
      break;
  }
  return "DOT";
}
}  // namespace

std::string writeAlgorithm(const Algorithm& algorithm, Format format,
                           const MscclWriteOptions& xml) {
  // chorus JSON and text hold steps, not the channel and semaphore tables of one-sided plans:
  // refuse rather than drop them.
  if (format == Format::json || format == Format::text)
    for (const RankProgram& program : algorithm.ranks)
      if (!program.channels.empty() || !program.semaphores.empty())
        throw FormatLimitError(
            fmt::format("plan '{}' cannot be written as {}: rank {} declares one-sided channels or "
                        "semaphores (an MSCCL++ plan), which that format does not hold yet",
                        algorithm.name, writtenFormatName(format), program.rank));
  // No format chorus writes holds LL packet operands (Step::srcPackets, dstPackets): a copy
  // would be written as a plain copy.
  if (format == Format::json || format == Format::text || format == Format::xml)
    for (const RankProgram& program : algorithm.ranks)
      for (const Threadblock& tb : program.threadblocks)
        for (std::size_t s = 0; s < tb.steps.size(); ++s)
          if (tb.steps[s].srcPackets || tb.steps[s].dstPackets)
            throw FormatLimitError(fmt::format(
                "plan '{}' cannot be written as {}: rank {} tb {} step {} ({}) moves LL packets "
                "(an MSCCL++ LL plan), which that format does not hold",
                algorithm.name, writtenFormatName(format), program.rank, tb.id, s,
                opName(tb.steps[s].op)));
  switch (format) {
    case Format::xml:
      return writeMscclXml(algorithm, xml);
    case Format::json:
      return writeJson(algorithm);
    case Format::text:
      return printText(algorithm);
    case Format::dot:
      return writeDot(algorithm);
    case Format::mscclppJson:
      return writeMscclppPlan(algorithm);
  }
  return {};
}

}  // namespace chorus::ir
