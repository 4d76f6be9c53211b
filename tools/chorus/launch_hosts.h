// Where `chorus launch --hosts` puts each rank, and how it starts a rank on another host: through
// a remote shell agent (ssh by default, like mpirun's plm_rsh_agent) running a short sh script
// that reads the rank's variables from its stdin (so secrets such as CHORUS_AUTH_TOKEN never
// appear on a command line) and kills the rank when that stdin closes, i.e. when the launcher
// or the agent goes away.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace chorus::cli {

struct HostSlots {
  std::string name;
  std::optional<int> slots;  // "name:slots"; nullopt when not given
};

// Parses "a,b" or "a:2,b:2" (IPv6 addresses in brackets: "[fd00::1]:2"). Throws OptionError for
// an empty entry, a bad slot count or a host listed twice.
std::vector<HostSlots> parseHosts(const std::string& spec);

struct RankPlacement {
  std::string host;
  int localRank = 0;   // index among the ranks on `host`
  bool local = false;  // `host` is this host: started directly, not through the agent
};

// Places `ranks` ranks host by host (ranks 0.. on the first host, and so on). Without slot
// counts the ranks are split as evenly as possible (earlier hosts get one more); with a count
// on every host each is filled in order. Throws OptionError when counts are given for some hosts
// only, or when they add up to fewer than `ranks`. `self` is this host's name.
std::vector<RankPlacement> placeRanks(const std::vector<HostSlots>& hosts, int ranks,
                                      const std::string& self);

// True for localhost, 127.0.0.1, ::1 and `self`.
bool isThisHost(const std::string& host, const std::string& self);

// `text` in single quotes for sh.
std::string shellQuote(std::string_view text);

// The sh script a remote host runs for one rank: enter `directory` (if it exists there), export
// the NAME=VALUE lines read from stdin up to an empty line, run `program`, and kill it with
// SIGKILL once stdin reaches its end; exits with the rank's exit status.
std::string remoteRankScript(const std::vector<std::string>& program, const std::string& directory);

// The stdin text remoteRankScript reads: one NAME=VALUE line per variable, then an empty line.
// Throws OptionError for a name that is not a shell variable name, a value with a newline, or
// more than 60,000 bytes in all.
std::string environmentLines(const std::map<std::string, std::string>& variables);

}  // namespace chorus::cli
