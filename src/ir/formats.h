// Format dispatch for the IR file formats (MSCCL XML, chorus JSON, text, DOT): name parsing,
// content sniffing and file/stdin reading. Used by the CLI and plan loading.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/algorithm.h"
#include "ir/msccl_xml.h"

namespace chorus::ir {

enum class Format { xml, json, text, dot };

// "xml", "json", "text" (or "txt"), "dot"; case-insensitive. nullopt for anything else.
std::optional<Format> parseFormatName(std::string_view name);

// Reads every algorithm in `text`, choosing the format from its content: first non-blank
// character '<' -> MSCCL XML (possibly several <algo>), '{' -> chorus JSON, the word
// "algorithm" (or a '#' comment) -> text IR. Throws ParseError otherwise, listing the formats.
std::vector<Algorithm> readAlgorithms(std::string_view text, const std::string& sourceName);

// Reads a file ("-" = standard input) with readAlgorithms; ParseError names the path.
std::vector<Algorithm> readAlgorithmsFile(const std::string& path);

// Serializes in `format`; `xml` applies to Format::xml only (default: the executor's names
// and limits, checked).
std::string writeAlgorithm(const Algorithm& algorithm, Format format,
                           const MscclWriteOptions& xml = {});

}  // namespace chorus::ir
