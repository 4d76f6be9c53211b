// The α-β-γ figures of the simulator's closed-form and port-model tests (the xCCL notes' cost
// model on a uniform fabric): round numbers, so expected times are easy to state by hand.
#pragma once

#include <cstdint>

namespace chorus::testing_support {

inline constexpr double kBandwidth = 10e9;   // bytes/s per link direction (β = 0.1 ns/B)
inline constexpr double kReduceRate = 25e9;  // bytes/s (γ = 0.04 ns/B)
inline constexpr double kSmallAlpha = 0.5e-6;
inline constexpr double kLargeAlpha = 200e-6;  // above a 1 MiB chunk's wire time: α terms dominate
inline constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;

}  // namespace chorus::testing_support
