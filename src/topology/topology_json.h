// The topology JSON format `chorus-topology/1` (documented in docs/topology.md): read, write
// and round-trip a Topology. Units in the file are GB/s (1e9 bytes/s) and microseconds; the
// model holds bytes/s and seconds.
#pragma once

#include <string>
#include <string_view>

#include "topology/topology.h"

namespace chorus::topology {

// Parses and validates a topology document. `origin` names the source in error messages.
// Throws chorus::ParseError naming the JSON path of what is wrong (e.g.
// "node.links[3].bandwidth_GBps: must be a number > 0").
Topology parseTopologyJson(std::string_view text, std::string_view origin = "<topology>");
// Reads a file ("-" = standard input). Throws chorus::ParseError (also when unreadable).
Topology readTopologyFile(const std::string& path);
// Deterministic, indented JSON that parseTopologyJson reads back to an equal model.
std::string toTopologyJson(const Topology& topology);

}  // namespace chorus::topology
