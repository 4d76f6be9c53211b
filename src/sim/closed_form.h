// Closed-form α-β-γ costs of the classic algorithms (xCCL notes; docs/sources.md "α-β-γ closed
// forms", Thakur, Rabenseifner & Gropp 2005): the simulator's fast analytic mode and the reference
// its event-driven mode is tested against.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace chorus::sim {

struct AlphaBetaGamma {
  double alpha = 0;  // seconds per message
  double beta = 0;   // seconds per byte sent
  double gamma = 0;  // seconds per byte reduced
  // The one-port model of the closed forms: a rank sends one message at a time and its port is
  // taken until the message arrived (topology::DeviceModel::sendPorts == 1).
  bool onePort = false;
};

// The predicted time of library algorithm `name` (e.g. "allreduce.ring") on p ranks for a call
// of `bytes` (nccl-tests size: the AllReduce/Broadcast/Reduce buffer, the gathered AllGather
// output, the scattered ReduceScatter input, each rank's whole AllToAll input), or nullopt when
// no closed form is known for it (or for this p, e.g. non-powers of two where the form assumes
// one). The forms are exact for chorus's compiled algorithm (default parameters) on
// topology::uniformTopology(p, α, 1/β, 1/γ) without tiling: chunks rounded as the runtime
// rounds them, and threadblocks to different peers overlapping (closed_form.cpp). With
// cost.onePort they are exact for uniformTopology(p, α, 1/β, 1/γ, /*sendPorts=*/1) instead.
std::optional<double> closedFormSeconds(std::string_view name, int p, std::uint64_t bytes,
                                        const AlphaBetaGamma& cost);

// The algorithms closedFormSeconds knows in both models (some only for powers of two), sorted.
std::vector<std::string_view> closedFormNames();

}  // namespace chorus::sim
