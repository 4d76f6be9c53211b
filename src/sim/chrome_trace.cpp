// Chrome trace-event JSON of a simulated call (the "Trace Event Format": complete events "X"
// with microsecond timestamps; process = rank, thread = threadblock).
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "sim/simulator.h"

namespace chorus::sim {

std::string chromeTraceJson(const ir::Algorithm& algorithm, const SimResult& result) {
  nlohmann::json events = nlohmann::json::array();
  for (const auto& rp : algorithm.ranks) {
    events.push_back({{"name", "process_name"},
                      {"ph", "M"},
                      {"pid", rp.rank},
                      {"args", {{"name", fmt::format("rank {}", rp.rank)}}}});
    for (const auto& tb : rp.threadblocks) {
      std::string label = fmt::format("tb {} ch {}", tb.id, tb.channel);
      if (tb.sendPeer >= 0) label += fmt::format(" send->{}", tb.sendPeer);
      if (tb.recvPeer >= 0) label += fmt::format(" recv<-{}", tb.recvPeer);
      events.push_back({{"name", "thread_name"},
                        {"ph", "M"},
                        {"pid", rp.rank},
                        {"tid", tb.id},
                        {"args", {{"name", label}}}});
    }
  }
  for (const auto& r : result.trace) {
    nlohmann::json args = {{"step", r.step}, {"tile", r.tile}, {"bytes", r.bytes}};
    if (r.peer >= 0) args["peer"] = r.peer;
    events.push_back({{"name", std::string(ir::opName(r.op))},
                      {"cat", "step"},
                      {"ph", "X"},
                      {"pid", r.rank},
                      {"tid", r.tb},
                      {"ts", r.start * 1e6},
                      {"dur", (r.end - r.start) * 1e6},
                      {"args", std::move(args)}});
  }
  nlohmann::json doc = {{"traceEvents", std::move(events)},
                        {"displayTimeUnit", "ns"},
                        {"otherData",
                         {{"algorithm", algorithm.name},
                          {"bytes", result.bytes},
                          {"predicted_us", result.seconds * 1e6}}}};
  return doc.dump(1);
}

}  // namespace chorus::sim
