// Link-weight matrices: bandwidth classes from topology routes, user files, printing.
//
// Algorithm (linkMatrixFromTopology):
//   1. Build the topology's Fabric and classify its resources by name: a resource named after a
//      node link ("node<n> <link name> (a->b)") takes the link's kind, a switch vertex
//      ("node<n> <switch name>") is neutral, everything else (NICs, the network core) is "other".
//   2. A route is NVLink-class when every resource it crosses is an NVLink/NVSwitch link or a
//      neutral switch. unit = the smallest bandwidth of any NVLink-class route.
//   3. weight(a, b) = 1 + round(route(a, b).bandwidth / unit) for NVLink-class routes, 1 for all
//      others, 0 on the diagonal (MXNet's "performance rank + 1", gpu_topology.h).
#include "synth/link_matrix.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>
#include <limits>
#include <sstream>
#include <unordered_map>

#include "support/error.h"
#include "topology/fabric.h"

namespace chorus::synth {
namespace {

enum class ResourceClass { nvlink, neutral, other };

// Step 1: the class of every Fabric resource, by the names Fabric gives them.
std::vector<ResourceClass> classifyResources(const topology::Fabric& fabric) {
  const topology::Topology& topology = fabric.topology();
  std::unordered_map<std::string, ResourceClass> byName;
  for (int n = 0; n < topology.nodes; ++n) {
    for (const topology::Link& link : topology.node.links) {
      const bool fast =
          link.kind == topology::LinkKind::nvlink || link.kind == topology::LinkKind::nvswitch;
      byName.emplace(fmt::format("node{} {}", n, link.name),
                     fast ? ResourceClass::nvlink : ResourceClass::other);
    }
    for (std::size_t v = static_cast<std::size_t>(topology.node.devices);
         v < topology.node.vertices.size(); ++v) {
      byName.emplace(fmt::format("node{} {}", n, topology.node.vertices[v].name),
                     ResourceClass::neutral);
    }
  }
  std::vector<ResourceClass> classes;
  for (const topology::Resource& resource : fabric.resources()) {
    std::string key = resource.name;
    // A link resource carries its direction in a trailing " (a->b)" or " (a<->b)".
    const std::size_t open = key.rfind(" (");
    if (!key.empty() && key.back() == ')' && open != std::string::npos) {
      const auto link = byName.find(key.substr(0, open));
      if (link != byName.end()) {
        classes.push_back(link->second);
        continue;
      }
    }
    const auto vertex = byName.find(key);
    classes.push_back(vertex != byName.end() ? vertex->second : ResourceClass::other);
  }
  return classes;
}

std::string formatWeight(double value) {
  return fmt::format("{}", value);
}

// Parses one number of a text matrix; nullopt-like failure reported through `ok`.
bool parseNumber(const std::string& token, double& value) {
  if (token.empty()) return false;
  char* end = nullptr;
  value = std::strtod(token.c_str(), &end);
  return end == token.c_str() + token.size();
}

LinkMatrix parseJsonMatrix(std::string_view text, const std::string& sourceName) {
  nlohmann::json document;
  try {
    document = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& error) {  // also out_of_range for huge numbers
    throw ParseError(
        fmt::format("{}: not valid JSON ({}); write [[0, 2, ...], ...] or {{\"matrix\": "
                    "[[...]]}}",
                    sourceName, error.what()));
  }
  const nlohmann::json* rows = &document;
  if (document.is_object()) {
    if (!document.contains("matrix")) {
      throw ParseError(fmt::format(
          "{}: a JSON object needs a \"matrix\" key holding the rows, e.g. {{\"matrix\": [[0, "
          "2], [2, 0]]}}",
          sourceName));
    }
    rows = &document["matrix"];
  }
  if (!rows->is_array()) {
    throw ParseError(fmt::format(
        "{}: the matrix must be a JSON array of rows, e.g. [[0, 2], [2, 0]]", sourceName));
  }
  const int size = static_cast<int>(rows->size());
  LinkMatrix matrix = makeLinkMatrix(size);
  for (int r = 0; r < size; ++r) {
    const nlohmann::json& row = (*rows)[static_cast<std::size_t>(r)];
    if (!row.is_array()) {
      throw ParseError(fmt::format("{}: row {} is not an array of numbers", sourceName, r));
    }
    if (static_cast<int>(row.size()) != size) {
      throw ParseError(fmt::format(
          "{}: row {} has {} entries but the matrix has {} rows; the matrix must be square",
          sourceName, r, row.size(), size));
    }
    for (int c = 0; c < size; ++c) {
      const nlohmann::json& entry = row[static_cast<std::size_t>(c)];
      if (!entry.is_number()) {
        throw ParseError(fmt::format("{}: row {}, column {} is {}, not a number", sourceName, r, c,
                                     entry.dump()));
      }
      matrix.at(r, c) = entry.get<double>();
    }
  }
  return matrix;
}

LinkMatrix parseTextMatrix(std::string_view text, const std::string& sourceName) {
  std::vector<std::vector<double>> rows;
  std::vector<int> lines;  // source line of each row
  std::istringstream in{std::string(text)};
  int lineNumber = 0;
  for (std::string line; std::getline(in, line);) {
    ++lineNumber;
    if (const std::size_t hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::replace(line.begin(), line.end(), ',', ' ');
    std::istringstream tokens(line);
    std::vector<double> row;
    for (std::string token; tokens >> token;) {
      double value = 0;
      if (!parseNumber(token, value)) {
        throw ParseError(fmt::format("{}:{}: row {}, column {} is '{}', not a number", sourceName,
                                     lineNumber, rows.size(), row.size(), token));
      }
      row.push_back(value);
    }
    if (row.empty()) continue;
    rows.push_back(std::move(row));
    lines.push_back(lineNumber);
  }
  const int size = static_cast<int>(rows.size());
  for (int r = 0; r < size; ++r) {
    if (static_cast<int>(rows[static_cast<std::size_t>(r)].size()) != size) {
      throw ParseError(fmt::format(
          "{}:{}: row {} has {} entries but the matrix has {} rows; the matrix must be square",
          sourceName, lines[static_cast<std::size_t>(r)], r,
          rows[static_cast<std::size_t>(r)].size(), size));
    }
  }
  LinkMatrix matrix = makeLinkMatrix(size);
  for (int r = 0; r < size; ++r)
    for (int c = 0; c < size; ++c)
      matrix.at(r, c) = rows[static_cast<std::size_t>(r)][static_cast<std::size_t>(c)];
  return matrix;
}

}  // namespace

LinkMatrix makeLinkMatrix(int size) {
  LinkMatrix matrix;
  matrix.size = size;
  matrix.weights.assign(static_cast<std::size_t>(size) * static_cast<std::size_t>(size), 0.0);
  return matrix;
}

LinkMatrix linkMatrixFromRows(const std::vector<std::vector<double>>& rows) {
  const int size = static_cast<int>(rows.size());
  LinkMatrix matrix = makeLinkMatrix(size);
  for (int r = 0; r < size; ++r) {
    const std::vector<double>& row = rows[static_cast<std::size_t>(r)];
    if (static_cast<int>(row.size()) != size) {
      throw OptionError(
          fmt::format("link matrix row {} has {} entries, expected {}", r, row.size(), size));
    }
    for (int c = 0; c < size; ++c)
      matrix.at(r, c) = row[static_cast<std::size_t>(c)];
  }
  return matrix;
}

LinkMatrix linkMatrixFromTopology(const topology::Topology& topology) {
  topology::Fabric fabric(topology);
  const std::vector<ResourceClass> classes = classifyResources(fabric);
  const int size = fabric.ranks();
  // Step 2: which routes are NVLink-class, and the unit bandwidth.
  std::vector<char> fast(static_cast<std::size_t>(size) * static_cast<std::size_t>(size), 0);
  double unit = std::numeric_limits<double>::infinity();
  for (int a = 0; a < size; ++a) {
    for (int b = 0; b < size; ++b) {
      if (a == b) continue;
      const topology::Route& route = fabric.route(a, b);
      bool nvlinkOnly = !route.resources.empty();
      for (const int resource : route.resources) {
        if (classes[static_cast<std::size_t>(resource)] == ResourceClass::other) {
          nvlinkOnly = false;
          break;
        }
      }
      if (nvlinkOnly) {
        fast[static_cast<std::size_t>(a * size + b)] = 1;
        unit = std::min(unit, route.bandwidth);
      }
    }
  }
  // Step 3: the classes.
  LinkMatrix matrix = makeLinkMatrix(size);
  for (int a = 0; a < size; ++a) {
    for (int b = 0; b < size; ++b) {
      if (a == b) continue;
      if (fast[static_cast<std::size_t>(a * size + b)] == 0) {
        matrix.at(a, b) = 1;
        continue;
      }
      const double ratio = fabric.route(a, b).bandwidth / unit;
      matrix.at(a, b) = 1 + std::max(1.0, std::round(ratio));
    }
  }
  return matrix;
}

void validateLinkMatrix(const LinkMatrix& matrix, std::string_view origin) {
  if (matrix.size < 2) {
    throw ParseError(fmt::format(
        "{}: the link matrix has {} row(s); trees need at least 2 GPUs (one row per GPU)", origin,
        matrix.size));
  }
  if (matrix.size > kMaxLinkMatrixSize) {
    throw ParseError(fmt::format("{}: the link matrix has {} rows; at most {} GPUs are supported",
                                 origin, matrix.size, kMaxLinkMatrixSize));
  }
  for (int r = 0; r < matrix.size; ++r) {
    for (int c = 0; c < matrix.size; ++c) {
      const double value = matrix.at(r, c);
      if (!std::isfinite(value) || value < 0) {
        throw ParseError(fmt::format(
            "{}: row {}, column {} is {}; link weights must be finite and >= 0 (0 = no link)",
            origin, r, c, formatWeight(value)));
      }
      if (r == c && value != 0) {
        throw ParseError(fmt::format(
            "{}: row {}, column {} is {}; the diagonal (a GPU's link to itself) must be 0", origin,
            r, c, formatWeight(value)));
      }
      if (value != matrix.at(c, r)) {
        throw ParseError(fmt::format(
            "{}: row {}, column {} is {} but row {}, column {} is {}; the matrix must be "
            "symmetric (links are used in both directions)",
            origin, r, c, formatWeight(value), c, r, formatWeight(matrix.at(c, r))));
      }
    }
  }
}

LinkMatrix parseLinkMatrix(std::string_view text, const std::string& sourceName) {
  const auto first = std::find_if(text.begin(), text.end(), [](char ch) {
    return !std::isspace(static_cast<unsigned char>(ch));
  });
  if (first == text.end()) {
    throw ParseError(fmt::format(
        "{}: the link matrix is empty; write one row of weights per GPU (e.g. '0 2' and '2 0')",
        sourceName));
  }
  const bool json = *first == '[' || *first == '{';
  LinkMatrix matrix = json ? parseJsonMatrix(text, sourceName) : parseTextMatrix(text, sourceName);
  validateLinkMatrix(matrix, sourceName);
  return matrix;
}

LinkMatrix readLinkMatrixFile(const std::string& path) {
  std::string text;
  if (path == "-") {
    text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
    return parseLinkMatrix(text, "<stdin>");
  }
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    throw ParseError(fmt::format("cannot read link matrix file '{}'; check the path", path));
  }
  text.assign(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
  return parseLinkMatrix(text, path);
}

std::string formatLinkMatrix(const LinkMatrix& matrix) {
  std::size_t width = std::to_string(std::max(0, matrix.size - 1)).size();
  for (const double value : matrix.weights)
    width = std::max(width, formatWeight(value).size());
  const std::size_t label = std::to_string(std::max(0, matrix.size - 1)).size();
  std::string out(label + 1, ' ');
  for (int c = 0; c < matrix.size; ++c)
    out += fmt::format(" {:>{}}", c, width);
  out += '\n';
  for (int r = 0; r < matrix.size; ++r) {
    out += fmt::format("{:>{}}:", r, label);
    for (int c = 0; c < matrix.size; ++c)
      out += fmt::format(" {:>{}}", formatWeight(matrix.at(r, c)), width);
    out += '\n';
  }
  return out;
}

}  // namespace chorus::synth
