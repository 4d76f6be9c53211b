#include "ir/formats.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

#include <fmt/format.h>

#include "ir/dot_format.h"
#include "ir/json_format.h"
#include "ir/msccl_xml.h"
#include "ir/text_format.h"
#include "support/error.h"

namespace chorus::ir {
namespace {

std::string lowercase(std::string_view text) {
  std::string out(text);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

std::string_view skipLeadingBlanks(std::string_view text) {
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);  // UTF-8 byte order mark
  const std::size_t first = text.find_first_not_of(" \t\r\n");
  return first == std::string_view::npos ? std::string_view() : text.substr(first);
}

}  // namespace

std::optional<Format> parseFormatName(std::string_view name) {
  const std::string l = lowercase(name);
  if (l == "xml") return Format::xml;
  if (l == "json") return Format::json;
  if (l == "text" || l == "txt") return Format::text;
  if (l == "dot") return Format::dot;
  return std::nullopt;
}

std::vector<Algorithm> readAlgorithms(std::string_view text, const std::string& sourceName) {
  const std::string_view body = skipLeadingBlanks(text);
  if (body.starts_with("<")) return readMscclXml(text, sourceName);
  if (body.starts_with("{")) return {readJson(text, sourceName)};
  if (body.starts_with("algorithm") || body.starts_with("#")) {
    return {parseText(text, sourceName)};
  }
  if (body.empty()) {
    throw ParseError(
        fmt::format("{}: the input is empty (expected MSCCL XML, chorus JSON or the "
                    "chorus text IR)",
                    sourceName));
  }
  throw ParseError(fmt::format(
      "{}: unrecognized format: the input starts with '{}' (expected MSCCL XML starting with "
      "'<algo', chorus JSON starting with '{{', or the chorus text IR starting with "
      "'algorithm'; DOT is output only)",
      sourceName, body.substr(0, std::min<std::size_t>(body.find('\n'), 20))));
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

std::string writeAlgorithm(const Algorithm& algorithm, Format format,
                           const MscclWriteOptions& xml) {
  switch (format) {
    case Format::xml:
      return writeMscclXml(algorithm, xml);
    case Format::json:
      return writeJson(algorithm);
    case Format::text:
      return printText(algorithm);
    case Format::dot:
      return writeDot(algorithm);
  }
  return {};
}

}  // namespace chorus::ir
