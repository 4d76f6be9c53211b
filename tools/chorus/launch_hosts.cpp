#include "launch_hosts.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <set>

#include "support/error.h"

namespace chorus::cli {
namespace {

constexpr int kMaxSlots = 4096;
constexpr std::size_t kMaxEnvironmentBytes = 60'000;

// One "--hosts" entry: "name", "name:slots", "[v6]" or "[v6]:slots"; a bare address with
// several colons is a name without slots.
HostSlots parseEntry(std::string_view entry, const std::string& spec) {
  const auto fail = [&](std::string_view problem) {
    return OptionError(fmt::format(
        "--hosts {}: '{}' {}; list hosts as NAME or NAME:SLOTS separated by commas (IPv6 "
        "addresses in brackets)",
        spec, entry, problem));
  };
  if (entry.empty()) throw fail("is empty");
  HostSlots host;
  std::string_view slotsText;
  if (entry.front() == '[') {
    const std::size_t close = entry.find(']');
    if (close == std::string_view::npos) throw fail("has no closing ']'");
    host.name = std::string(entry.substr(1, close - 1));
    const std::string_view rest = entry.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') throw fail("has text after ']'");
      slotsText = rest.substr(1);
      if (slotsText.empty()) throw fail("has an empty slot count");
    }
  } else if (const std::size_t colon = entry.find(':');
             colon != std::string_view::npos &&
             entry.find(':', colon + 1) == std::string_view::npos) {
    host.name = std::string(entry.substr(0, colon));
    slotsText = entry.substr(colon + 1);
    if (slotsText.empty()) throw fail("has an empty slot count");
  } else {
    host.name = std::string(entry);
  }
  if (host.name.empty()) throw fail("has no host name");
  if (!slotsText.empty()) {
    int slots = 0;
    const auto [end, error] =
        std::from_chars(slotsText.data(), slotsText.data() + slotsText.size(), slots);
    if (error != std::errc() || end != slotsText.data() + slotsText.size() || slots < 1 ||
        slots > kMaxSlots)
      throw fail(fmt::format("has slot count '{}', not a number in 1..{}", slotsText, kMaxSlots));
    host.slots = slots;
  }
  return host;
}

bool isShellName(std::string_view name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name.front()))) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

}  // namespace

std::vector<HostSlots> parseHosts(const std::string& spec) {
  std::vector<HostSlots> hosts;
  std::set<std::string> seen;
  std::size_t start = 0;
  while (start <= spec.size()) {
    const std::size_t comma = std::min(spec.find(',', start), spec.size());
    HostSlots host = parseEntry(std::string_view(spec).substr(start, comma - start), spec);
    if (!seen.insert(host.name).second) {
      throw OptionError(fmt::format(
          "--hosts {}: host '{}' is listed twice; list each host once, with its slot count "
          "(NAME:SLOTS) for several ranks",
          spec, host.name));
    }
    hosts.push_back(std::move(host));
    start = comma + 1;
  }
  return hosts;
}

std::vector<RankPlacement> placeRanks(const std::vector<HostSlots>& hosts, int ranks,
                                      const std::string& self) {
  CHORUS_INTERNAL_ASSERT(!hosts.empty() && ranks >= 1, "placeRanks needs hosts and ranks");
  const auto withSlots = std::count_if(
      hosts.begin(), hosts.end(), [](const HostSlots& host) { return host.slots.has_value(); });
  std::vector<int> perHost(hosts.size());
  if (withSlots == 0) {
    const int count = static_cast<int>(hosts.size());
    for (int h = 0; h < count; ++h)
      perHost[static_cast<std::size_t>(h)] = ranks / count + (h < ranks % count ? 1 : 0);
  } else if (withSlots != static_cast<std::ptrdiff_t>(hosts.size())) {
    throw OptionError(
        "--hosts gives slot counts for some hosts only; give NAME:SLOTS for every host, or no "
        "counts to split the ranks evenly");
  } else {
    int left = ranks;
    int total = 0;
    for (std::size_t h = 0; h < hosts.size(); ++h) {
      perHost[h] = std::min(left, *hosts[h].slots);
      left -= perHost[h];
      total += *hosts[h].slots;
    }
    if (left > 0) {
      throw OptionError(fmt::format(
          "--hosts has {} slots in all, fewer than -n {}; raise the slot counts (NAME:SLOTS) or "
          "add hosts",
          total, ranks));
    }
  }
  std::vector<RankPlacement> placements;
  for (std::size_t h = 0; h < hosts.size(); ++h) {
    for (int local = 0; local < perHost[h]; ++local)
      placements.push_back({hosts[h].name, local, isThisHost(hosts[h].name, self)});
  }
  return placements;
}

bool isThisHost(const std::string& host, const std::string& self) {
  return host == "localhost" || host == "127.0.0.1" || host == "::1" ||
         (!self.empty() && host == self);
}

std::string shellQuote(std::string_view text) {
  std::string quoted = "'";
  for (char c : text) {
    if (c == '\'')
      quoted += "'\\''";
    else
      quoted += c;
  }
  return quoted + "'";
}

std::string remoteRankScript(const std::vector<std::string>& program,
                             const std::string& directory) {
  std::string command;
  for (const std::string& word : program) {
    if (!command.empty()) command += ' ';
    command += shellQuote(word);
  }
  // fd 3 keeps the agent's stdin for the watcher: an asynchronous command's own stdin is
  // /dev/null. The watcher reads until the launcher's end closes, then kills the rank; it is
  // stopped once the rank has exited by itself.
  return fmt::format(
      "cd {} 2>/dev/null; "
      "while IFS= read -r v && [ -n \"$v\" ]; do export \"$v\"; done; "
      "exec 3<&0; "
      "{} 3<&- </dev/null & p=$!; "
      "(while read -r _; do :; done <&3; kill -9 $p) >/dev/null 2>&1 & w=$!; "
      "exec 3<&-; "
      "wait $p; s=$?; kill $w 2>/dev/null; exit $s",
      shellQuote(directory), command);
}

std::string environmentLines(const std::map<std::string, std::string>& variables) {
  std::string lines;
  for (const auto& [name, value] : variables) {
    if (!isShellName(name)) {
      throw OptionError(fmt::format(
          "cannot pass variable '{}' to remote ranks: not a shell variable name ([A-Za-z_] "
          "then [A-Za-z0-9_])",
          name));
    }
    if (value.find('\n') != std::string::npos || value.find('\0') != std::string::npos) {
      throw OptionError(fmt::format(
          "cannot pass variable {} to remote ranks: its value has a newline; set it on the "
          "hosts instead",
          name));
    }
    lines += name + "=" + value + "\n";
  }
  // The launcher writes them into a pipe before the agent reads: stay within its 64 KiB.
  if (lines.size() > kMaxEnvironmentBytes) {
    throw OptionError(fmt::format(
        "the variables for remote ranks take {} bytes, over {}; pass fewer (-x, CHORUS_*) or "
        "set the large ones on the hosts",
        lines.size(), kMaxEnvironmentBytes));
  }
  return lines + "\n";
}

}  // namespace chorus::cli
