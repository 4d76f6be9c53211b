// Top-k F1 of a predicted ranking against a measured one (P² §5, Table 5): how well the
// simulator picks the programs worth measuring. Used by `chorus synth reduction --run`; pure.
#pragma once

#include <span>

namespace chorus::synth {

// F1 of the predicted top-k set against the measured top-k set of the same candidates:
// candidate i took predicted[i] and measured[i] seconds (lower is better). P² Table 5 reports
// "top-k F1-score" without defining it; this is the set reading:
//   P = the k' = min(k, n) candidates with the smallest predicted times,
//   M = the k' candidates with the smallest measured times (ties: lower index first),
//   precision = |P ∩ M| / |P|, recall = |P ∩ M| / |M|, F1 = 2·precision·recall / (precision +
//   recall), which is |P ∩ M| / k' since |P| = |M| = k' (0 when P ∩ M is empty).
// k' = n makes P = M, so F1 = 1: a top-k figure says something only when k < n.
// Preconditions: predicted.size() == measured.size() >= 1, k >= 1 (CHORUS_INTERNAL_ASSERT).
double computeTopKF1(std::span<const double> predicted, std::span<const double> measured, int k);

}  // namespace chorus::synth
