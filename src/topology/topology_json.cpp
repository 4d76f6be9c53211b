#include "topology/topology_json.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <initializer_list>
#include <iostream>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unordered_map>

#include "support/error.h"

namespace chorus::topology {
namespace {

using Json = nlohmann::ordered_json;

constexpr std::string_view kFormat = "chorus-topology/1";
constexpr double kBytesPerGB = 1e9;     // bytes/s per GB/s
constexpr double kSecondsPerUs = 1e-6;  // seconds per microsecond

// Device vertices are named "gpu0".. unless the file lists names.
std::string defaultDeviceName(int d) {
  return fmt::format("gpu{}", d);
}

std::string defaultLinkName(const NodeModel& node, const Link& link) {
  return fmt::format("{} {}-{}", linkKindName(link.kind),
                     node.vertices[static_cast<std::size_t>(link.a)].name,
                     node.vertices[static_cast<std::size_t>(link.b)].name);
}

// ---------------------------------------------------------------------------------------------
// Writing

// The value rounded to 12 significant digits, so unit conversions (22.5e9 / 1e9) print short
// and a written file reads back within 1e-12 relative.
double rounded(double value) {
  return std::stod(fmt::format("{:.12g}", value));
}

// One-line JSON with ", " and ": " separators.
std::string compact(const Json& value) {
  std::string out;
  if (value.is_object()) {
    out += '{';
    bool first = true;
    for (auto it = value.begin(); it != value.end(); ++it) {
      out += first ? "" : ", ";
      first = false;
      out += Json(it.key()).dump() + ": " + compact(it.value());
    }
    return out + '}';
  }
  if (value.is_array()) {
    out += '[';
    for (std::size_t i = 0; i < value.size(); ++i)
      out += (i ? ", " : "") + compact(value[i]);
    return out + ']';
  }
  return value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

// The top level and "node" get one member per line, arrays of objects one element per line;
// everything else is compact.
void appendPretty(std::string& out, const Json& value, int indent) {
  const std::string pad(static_cast<std::size_t>(indent + 2), ' ');
  if (value.is_object()) {
    out += "{\n";
    bool first = true;
    for (auto it = value.begin(); it != value.end(); ++it) {
      out += first ? "" : ",\n";
      first = false;
      out += pad + Json(it.key()).dump() + ": ";
      const Json& member = it.value();
      const bool nested = it.key() == "node";
      const bool list = member.is_array() && !member.empty() && member.front().is_object();
      if (nested) {
        appendPretty(out, member, indent + 2);
      } else if (list) {
        out += "[\n";
        for (std::size_t i = 0; i < member.size(); ++i)
          out += pad + "  " + compact(member[i]) + (i + 1 < member.size() ? ",\n" : "\n");
        out += pad + "]";
      } else {
        out += compact(member);
      }
    }
    out += "\n" + std::string(static_cast<std::size_t>(indent), ' ') + "}";
    return;
  }
  out += compact(value);
}

Json deviceList(const NodeModel& node) {
  bool defaults = true;
  for (int d = 0; d < node.devices; ++d)
    defaults = defaults && node.vertices[static_cast<std::size_t>(d)].name == defaultDeviceName(d);
  if (defaults) return node.devices;
  Json names = Json::array();
  for (int d = 0; d < node.devices; ++d)
    names.push_back(node.vertices[static_cast<std::size_t>(d)].name);
  return names;
}

Json nodeJson(const NodeModel& node) {
  Json json;
  json["name"] = node.name;
  json["devices"] = deviceList(node);
  json["switches"] = Json::array();
  for (std::size_t v = static_cast<std::size_t>(node.devices); v < node.vertices.size(); ++v) {
    const Vertex& vertex = node.vertices[v];
    json["switches"].push_back({{"name", vertex.name},
                                {"bandwidth_GBps", rounded(vertex.bandwidth / kBytesPerGB)},
                                {"memory", vertex.memory}});
  }
  json["links"] = Json::array();
  for (const Link& link : node.links) {
    json["links"].push_back({{"name", link.name},
                             {"kind", linkKindName(link.kind)},
                             {"between",
                              {node.vertices[static_cast<std::size_t>(link.a)].name,
                               node.vertices[static_cast<std::size_t>(link.b)].name}},
                             {"bandwidth_GBps", rounded(link.bandwidth / kBytesPerGB)},
                             {"latency_us", rounded(link.latency / kSecondsPerUs)},
                             {"duplex", link.duplex}});
  }
  json["nics"] = Json::array();
  for (const Nic& nic : node.nics) {
    json["nics"].push_back({{"name", nic.name},
                            {"devices", nic.devices},
                            {"bandwidth_GBps", rounded(nic.bandwidth / kBytesPerGB)},
                            {"latency_us", rounded(nic.latency / kSecondsPerUs)}});
  }
  json["levels"] = Json::array();
  for (const Level& level : node.levels)
    json["levels"].push_back({{"name", level.name}, {"groups", level.groups}});
  const DeviceModel& device = node.device;
  json["device"] = {{"kind", device.kind},
                    {"reduce_GBps", rounded(device.reduceRate / kBytesPerGB)},
                    {"copy_GBps", rounded(device.copyRate / kBytesPerGB)},
                    {"engines", device.engines},
                    {"send_ports", device.sendPorts},
                    {"slices", device.slices},
                    {"step_overhead_us", rounded(device.stepOverhead / kSecondsPerUs)},
                    {"message_latency_us", rounded(device.messageLatency / kSecondsPerUs)}};
  for (const auto& [key, curve] : {std::pair{"copy_curve", &device.copyCurve},
                                   std::pair{"reduce_curve", &device.reduceCurve}}) {
    if (curve->empty()) continue;
    Json points = Json::array();
    for (const RatePoint& point : *curve)
      points.push_back({{"working_set_bytes", rounded(point.workingSet)},
                        {"GBps", rounded(point.rate / kBytesPerGB)}});
    json["device"][key] = std::move(points);
  }
  json["cores"] = node.cores;
  json["wake_latency_us"] = rounded(node.wakeLatency / kSecondsPerUs);
  return json;
}

// ---------------------------------------------------------------------------------------------
// Reading

// A JSON path, rendered only for errors ("node.links[3].bandwidth_GBps").
struct JsonPath {
  const JsonPath* parent = nullptr;
  std::string_view key;
  int index = -1;

  JsonPath member(std::string_view name) const { return {this, name, -1}; }
  JsonPath element(std::size_t i) const { return {this, {}, static_cast<int>(i)}; }
  std::string render() const {
    const std::string prefix = parent != nullptr ? parent->render() : std::string();
    if (index >= 0) return fmt::format("{}[{}]", prefix, index);
    if (prefix.empty()) return std::string(key);
    return fmt::format("{}.{}", prefix, key);
  }
};

std::string describe(const Json& value) {
  if (value.is_string()) return fmt::format("the string {}", value.dump());
  if (value.is_number()) return value.dump();
  return fmt::format("a{} {}", value.is_object() || value.is_array() ? "n" : "", value.type_name());
}

class Reader {
 public:
  explicit Reader(std::string_view origin) : origin_(origin) {}

  Topology read(const Json& root) const {
    const JsonPath top;
    expectObject(root, top, {"format", "name", "description", "nodes", "node", "network"});
    const std::string format = string(root, top, "format");
    if (format != kFormat) {
      fail(top.member("format"),
           fmt::format("is \"{}\"; this chorus reads \"{}\"", format, kFormat));
    }
    Topology topology;
    topology.name = string(root, top, "name");
    if (root.contains("description")) topology.description = string(root, top, "description");
    if (root.contains("nodes"))
      topology.nodes = integer(root, top, "nodes", 1, std::numeric_limits<int>::max());
    topology.node = readNode(field(root, top, "node"), top.member("node"));
    if (root.contains("network")) {
      const JsonPath path = top.member("network");
      const Json& network = root.at("network");
      expectObject(network, path, {"latency_us", "oversubscription"});
      if (network.contains("latency_us"))
        topology.network.latency = number(network, path, "latency_us") * kSecondsPerUs;
      if (network.contains("oversubscription"))
        topology.network.oversubscription = number(network, path, "oversubscription");
    }
    return topology;
  }

  [[noreturn]] void fail(const JsonPath& path, const std::string& what) const {
    std::string where = path.render();
    if (where.empty()) where = "top level";
    throw ParseError(fmt::format("{}: {}: {}", origin_, where, what));
  }

 private:
  NodeModel readNode(const Json& json, const JsonPath& path) const {
    expectObject(json, path,
                 {"name", "devices", "switches", "links", "nics", "levels", "device", "cores",
                  "wake_latency_us"});
    NodeModel node;
    node.name = json.contains("name") ? string(json, path, "name") : std::string();
    readDevices(field(json, path, "devices"), path.member("devices"), node);
    if (json.contains("switches")) {
      const JsonPath switchesPath = path.member("switches");
      const Json& switches = array(json, path, "switches");
      for (std::size_t i = 0; i < switches.size(); ++i) {
        const JsonPath at = switchesPath.element(i);
        expectObject(switches[i], at, {"name", "bandwidth_GBps", "memory"});
        Vertex vertex;
        vertex.name = string(switches[i], at, "name");
        if (switches[i].contains("bandwidth_GBps"))
          vertex.bandwidth = number(switches[i], at, "bandwidth_GBps") * kBytesPerGB;
        if (switches[i].contains("memory")) vertex.memory = boolean(switches[i], at, "memory");
        node.vertices.push_back(std::move(vertex));
      }
    }
    std::unordered_map<std::string, int> vertexIndex;
    for (std::size_t v = 0; v < node.vertices.size(); ++v) {
      if (!vertexIndex.emplace(node.vertices[v].name, static_cast<int>(v)).second) {
        fail(v < static_cast<std::size_t>(node.devices)
                 ? path.member("devices").element(v)
                 : path.member("switches").element(v - static_cast<std::size_t>(node.devices)),
             fmt::format("the name '{}' is used twice; vertex names must be unique",
                         node.vertices[v].name));
      }
    }
    if (json.contains("links")) {
      const JsonPath linksPath = path.member("links");
      const Json& links = array(json, path, "links");
      for (std::size_t i = 0; i < links.size(); ++i)
        node.links.push_back(readLink(links[i], linksPath.element(i), node, vertexIndex));
    }
    if (json.contains("nics")) {
      const JsonPath nicsPath = path.member("nics");
      const Json& nics = array(json, path, "nics");
      for (std::size_t i = 0; i < nics.size(); ++i) {
        const JsonPath at = nicsPath.element(i);
        expectObject(nics[i], at, {"name", "devices", "bandwidth_GBps", "latency_us"});
        Nic nic;
        nic.name = nics[i].contains("name") ? string(nics[i], at, "name") : fmt::format("nic{}", i);
        nic.devices =
            deviceIndices(field(nics[i], at, "devices"), at.member("devices"), node, vertexIndex);
        nic.bandwidth = number(nics[i], at, "bandwidth_GBps") * kBytesPerGB;
        if (nics[i].contains("latency_us"))
          nic.latency = number(nics[i], at, "latency_us") * kSecondsPerUs;
        node.nics.push_back(std::move(nic));
      }
    }
    if (json.contains("levels")) {
      const JsonPath levelsPath = path.member("levels");
      const Json& levels = array(json, path, "levels");
      for (std::size_t i = 0; i < levels.size(); ++i) {
        const JsonPath at = levelsPath.element(i);
        expectObject(levels[i], at, {"name", "groups"});
        Level level;
        level.name = string(levels[i], at, "name");
        const JsonPath groupsPath = at.member("groups");
        const Json& groups = array(levels[i], at, "groups");
        for (std::size_t g = 0; g < groups.size(); ++g)
          level.groups.push_back(
              deviceIndices(groups[g], groupsPath.element(g), node, vertexIndex));
        node.levels.push_back(std::move(level));
      }
    }
    if (json.contains("device")) node.device = readDevice(json.at("device"), path.member("device"));
    if (json.contains("cores"))
      node.cores = integer(json, path, "cores", 0, std::numeric_limits<int>::max());
    if (json.contains("wake_latency_us"))
      node.wakeLatency = number(json, path, "wake_latency_us") * kSecondsPerUs;
    return node;
  }

  // "devices": a count (named gpu0..) or an array of names.
  void readDevices(const Json& json, const JsonPath& path, NodeModel& node) const {
    if (json.is_number_integer()) {
      node.devices = integerValue(json, path, 1, 1 << 20);
      for (int d = 0; d < node.devices; ++d)
        node.vertices.push_back({defaultDeviceName(d)});
      return;
    }
    if (!json.is_array() || json.empty()) {
      fail(path, fmt::format("is {}; use a device count (devices are named gpu0, gpu1, ...) or "
                             "an array of device names",
                             describe(json)));
    }
    for (std::size_t d = 0; d < json.size(); ++d) {
      if (!json[d].is_string() || json[d].get<std::string>().empty())
        fail(path.element(d), fmt::format("is {}; expected a device name", describe(json[d])));
      node.vertices.push_back({json[d].get<std::string>()});
    }
    node.devices = static_cast<int>(json.size());
  }

  Link readLink(const Json& json, const JsonPath& path, const NodeModel& node,
                const std::unordered_map<std::string, int>& vertexIndex) const {
    expectObject(json, path, {"name", "kind", "between", "bandwidth_GBps", "latency_us", "duplex"});
    Link link;
    if (json.contains("kind")) {
      try {
        link.kind = parseLinkKind(string(json, path, "kind"));
      } catch (const ParseError& error) {
        fail(path.member("kind"), error.what());
      }
    }
    const JsonPath betweenPath = path.member("between");
    const Json& between = field(json, path, "between");
    if (!between.is_array() || between.size() != 2) {
      fail(betweenPath, fmt::format("is {}; expected two vertices, e.g. [\"gpu0\", \"gpu3\"]",
                                    describe(between)));
    }
    link.a = vertex(between[0], betweenPath.element(0), node, vertexIndex);
    link.b = vertex(between[1], betweenPath.element(1), node, vertexIndex);
    link.bandwidth = number(json, path, "bandwidth_GBps") * kBytesPerGB;
    if (json.contains("latency_us"))
      link.latency = number(json, path, "latency_us") * kSecondsPerUs;
    if (json.contains("duplex")) link.duplex = boolean(json, path, "duplex");
    link.name = json.contains("name") ? string(json, path, "name") : defaultLinkName(node, link);
    return link;
  }

  DeviceModel readDevice(const Json& json, const JsonPath& path) const {
    expectObject(json, path,
                 {"kind", "reduce_GBps", "copy_GBps", "engines", "send_ports", "slices",
                  "step_overhead_us", "message_latency_us", "copy_curve", "reduce_curve"});
    DeviceModel device;
    if (json.contains("kind")) device.kind = string(json, path, "kind");
    if (json.contains("reduce_GBps"))
      device.reduceRate = number(json, path, "reduce_GBps") * kBytesPerGB;
    if (json.contains("copy_GBps")) device.copyRate = number(json, path, "copy_GBps") * kBytesPerGB;
    if (json.contains("engines"))
      device.engines = integer(json, path, "engines", 0, std::numeric_limits<int>::max());
    if (json.contains("send_ports"))
      device.sendPorts = integer(json, path, "send_ports", 0, std::numeric_limits<int>::max());
    if (json.contains("slices"))
      device.slices = integer(json, path, "slices", 1, std::numeric_limits<int>::max());
    if (json.contains("step_overhead_us"))
      device.stepOverhead = number(json, path, "step_overhead_us") * kSecondsPerUs;
    if (json.contains("message_latency_us"))
      device.messageLatency = number(json, path, "message_latency_us") * kSecondsPerUs;
    if (json.contains("copy_curve"))
      device.copyCurve = readCurve(json.at("copy_curve"), path.member("copy_curve"));
    if (json.contains("reduce_curve"))
      device.reduceCurve = readCurve(json.at("reduce_curve"), path.member("reduce_curve"));
    return device;
  }

  // [{"working_set_bytes": B, "GBps": R}, ...]
  std::vector<RatePoint> readCurve(const Json& json, const JsonPath& path) const {
    if (!json.is_array())
      fail(path, fmt::format("is {}; expected an array of {{\"working_set_bytes\", \"GBps\"}}",
                             describe(json)));
    std::vector<RatePoint> curve;
    for (std::size_t i = 0; i < json.size(); ++i) {
      const JsonPath at = path.element(i);
      expectObject(json[i], at, {"working_set_bytes", "GBps"});
      curve.push_back(
          {number(json[i], at, "working_set_bytes"), number(json[i], at, "GBps") * kBytesPerGB});
    }
    return curve;
  }

  // A vertex name, or a device index.
  int vertex(const Json& json, const JsonPath& path, const NodeModel& node,
             const std::unordered_map<std::string, int>& vertexIndex) const {
    if (json.is_string()) {
      const auto it = vertexIndex.find(json.get<std::string>());
      if (it == vertexIndex.end()) {
        std::string names;
        for (const Vertex& v : node.vertices)
          names += (names.empty() ? "" : ", ") + v.name;
        fail(path, fmt::format("'{}' is not a vertex of the node; use one of {}",
                               json.get<std::string>(), names));
      }
      return it->second;
    }
    if (json.is_number_integer()) {
      const long long d = json.get<long long>();
      if (d < 0 || d >= node.devices) {
        fail(path, fmt::format("{} is not a device index (0..{}); name switches by their name",
                               json.dump(), node.devices - 1));
      }
      return static_cast<int>(d);
    }
    fail(path, fmt::format("is {}; expected a vertex name or a device index", describe(json)));
  }

  std::vector<int> deviceIndices(const Json& json, const JsonPath& path, const NodeModel& node,
                                 const std::unordered_map<std::string, int>& vertexIndex) const {
    if (!json.is_array()) {
      fail(path, fmt::format("is {}; expected an array of device indices or names, e.g. [0, 1]",
                             describe(json)));
    }
    std::vector<int> devices;
    for (std::size_t i = 0; i < json.size(); ++i) {
      const int v = vertex(json[i], path.element(i), node, vertexIndex);
      if (v >= node.devices)
        fail(path.element(i), fmt::format("'{}' is a switch; list devices only",
                                          node.vertices[static_cast<std::size_t>(v)].name));
      devices.push_back(v);
    }
    return devices;
  }

  void expectObject(const Json& value, const JsonPath& path,
                    std::initializer_list<std::string_view> allowed) const {
    if (!value.is_object()) fail(path, fmt::format("is {}; expected an object", describe(value)));
    for (auto it = value.begin(); it != value.end(); ++it) {
      if (std::find(allowed.begin(), allowed.end(), it.key()) != allowed.end()) continue;
      std::string names;
      for (std::string_view name : allowed)
        names += (names.empty() ? "" : ", ") + std::string(name);
      fail(path.member(it.key()),
           fmt::format("unknown key; check the spelling (expected one of {})", names));
    }
  }

  const Json& field(const Json& object, const JsonPath& path, std::string_view key) const {
    const auto it = object.find(key);
    if (it == object.end()) fail(path.member(key), "is missing; add it (see docs/topology.md)");
    return *it;
  }

  std::string string(const Json& object, const JsonPath& path, std::string_view key) const {
    const Json& value = field(object, path, key);
    if (!value.is_string())
      fail(path.member(key), fmt::format("is {}; expected a string", describe(value)));
    return value.get<std::string>();
  }

  bool boolean(const Json& object, const JsonPath& path, std::string_view key) const {
    const Json& value = field(object, path, key);
    if (!value.is_boolean())
      fail(path.member(key), fmt::format("is {}; expected true or false", describe(value)));
    return value.get<bool>();
  }

  // Non-negative numbers only: every number of the format is a rate, a time or a ratio.
  double number(const Json& object, const JsonPath& path, std::string_view key) const {
    const Json& value = field(object, path, key);
    if (!value.is_number())
      fail(path.member(key), fmt::format("is {}; expected a number", describe(value)));
    const double v = value.get<double>();
    if (!std::isfinite(v) || v < 0)
      fail(path.member(key), fmt::format("is {}; it must be a number >= 0", value.dump()));
    return v;
  }

  int integerValue(const Json& value, const JsonPath& path, long long lo, long long hi) const {
    const bool ok =
        value.is_number_integer() &&
        (value.is_number_unsigned() ? value.get<std::uint64_t>() <= static_cast<std::uint64_t>(hi)
                                    : value.get<long long>() <= hi) &&
        (value.is_number_unsigned() || value.get<long long>() >= lo);
    if (!ok) {
      fail(path, fmt::format("is {}; expected an integer in {}..{}", describe(value), lo, hi));
    }
    return static_cast<int>(value.get<long long>());
  }

  int integer(const Json& object, const JsonPath& path, std::string_view key, long long lo,
              long long hi) const {
    return integerValue(field(object, path, key), path.member(key), lo, hi);
  }

  const Json& array(const Json& object, const JsonPath& path, std::string_view key) const {
    const Json& value = field(object, path, key);
    if (!value.is_array())
      fail(path.member(key), fmt::format("is {}; expected an array", describe(value)));
    return value;
  }

  std::string origin_;
};

}  // namespace

Topology parseTopologyJson(std::string_view text, std::string_view origin) {
  Json root;
  try {
    root = Json::parse(text);
  } catch (const Json::exception& error) {  // parse_error, or out_of_range for huge numbers
    throw ParseError(fmt::format("{}: not valid JSON ({}); fix the syntax", origin, error.what()));
  }
  Topology topology = Reader(origin).read(root);
  try {
    validate(topology);
  } catch (const ParseError& error) {
    throw ParseError(fmt::format("{}: {}", origin, error.what()));
  }
  return topology;
}

Topology readTopologyFile(const std::string& path) {
  std::string text;
  if (path == "-") {
    text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  } else {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      throw ParseError(fmt::format(
          "cannot read topology file '{}'; check the path (or name a preset: chorus topology "
          "list)",
          path));
    }
    std::ostringstream buffer;
    buffer << in.rdbuf();
    text = buffer.str();
  }
  return parseTopologyJson(text, path == "-" ? "<stdin>" : path);
}

std::string toTopologyJson(const Topology& topology) {
  Json root;
  root["format"] = kFormat;
  root["name"] = topology.name;
  root["description"] = topology.description;
  root["nodes"] = topology.nodes;
  root["node"] = nodeJson(topology.node);
  root["network"] = {{"latency_us", rounded(topology.network.latency / kSecondsPerUs)},
                     {"oversubscription", rounded(topology.network.oversubscription)}};
  std::string out;
  appendPretty(out, root, 0);
  return out + "\n";
}

}  // namespace chorus::topology
