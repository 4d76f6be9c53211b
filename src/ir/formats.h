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

// mscclppJson: MSCCL++'s execution-plan JSON (ir/mscclpp_plan_writer.h; written, and read by
// readAlgorithms like every format chorus detects).
enum class Format { xml, json, text, dot, mscclppJson };

// "xml", "json", "text" (or "txt"), "dot", "mscclpp-json"; case-insensitive. nullopt for
// anything else.
std::optional<Format> parseFormatName(std::string_view name);

// Which format `text` is in, judged by its content with an ordered table of probes: "MSCCL XML"
// (XML whose first element, after any declaration, comments and DOCTYPE, is <algo>), "chorus
// JSON" (a JSON object whose "format" is "chorus-ir"), "MSCCL++ execution plan" (a JSON object
// with "gpus", each with "threadblocks" of "ops", or "num_threads_per_block"), "chorus text IR"
// (an 'algorithm' line first, after blank and '#' comment lines), "DOT" ([strict] digraph or
// graph); nullopt for anything else. Pure.
std::optional<std::string_view> detectFormat(std::string_view text);

// Reads every algorithm in `text` (MSCCL XML may hold several <algo>), with the reader of the
// format detectFormat finds (an MSCCL++ execution plan: ir/mscclpp_plan.h). Throws ParseError
// naming `sourceName`: the reader's, or for DOT "DOT is output only", and for anything else
// "unrecognized format" with what the input looks like (other JSON: its top-level keys or "format";
// other XML: its first element; malformed JSON: the parser's message); each lists the formats
// chorus reads.
std::vector<Algorithm> readAlgorithms(std::string_view text, const std::string& sourceName);

// Reads a file ("-" = standard input) with readAlgorithms; ParseError names the path.
std::vector<Algorithm> readAlgorithmsFile(const std::string& path);

// Serializes in `format`; `xml` applies to Format::xml only (default: the executor's names
// and limits, checked).
std::string writeAlgorithm(const Algorithm& algorithm, Format format,
                           const MscclWriteOptions& xml = {});

}  // namespace chorus::ir
