// The group reduction: an in-place AllReduce inside each of several disjoint groups that
// partition the ranks, the collective of P²'s reduction programs (P² §3.2). Its name
// carries the groups, "group-reduction:0,1,2,3;4,5,6,7", so an IR that names it (customName;
// the MSCCL XML attribute "custom") is checked by the verifier and `chorus run` like a
// built-in collective.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ir/collective.h"

namespace chorus::ir {

inline constexpr std::string_view kGroupReductionPrefix = "group-reduction:";

// out(d)[k] = Σ_{e ∈ group(d)} in(e, k), with `groups` in the given order. Throws
// chorus::OptionError unless the groups partition 0..nranks-1 and chunkFactor >= 1.
std::shared_ptr<const Collective> makeGroupReduction(int nranks, int chunkFactor,
                                                     std::vector<std::vector<int>> groups);

// "group-reduction:0,1;2,3" for groups {0,1} and {2,3}.
std::string groupReductionName(const std::vector<std::vector<int>>& groups);

// The group reduction `name` describes, sized by `options` (nranks, chunkFactor); nullptr when
// `name` does not start with kGroupReductionPrefix. Throws chorus::ParseError when it does but
// the groups are malformed or do not partition the ranks.
std::shared_ptr<const Collective> groupReductionNamed(const std::string& name,
                                                      const CollectiveOptions& options);

}  // namespace chorus::ir
