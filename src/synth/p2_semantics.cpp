#include "synth/p2_semantics.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <iterator>

#include "support/error.h"
#include "support/index.h"

namespace chorus::synth {
namespace {

std::string nameOf(std::span<const int> names, std::size_t position) {
  return names.empty() ? fmt::format("#{}", position) : std::to_string(names[position]);
}

std::string formatRows(const std::vector<int>& rows) {
  std::string text = "{";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (i > 0) text += ',';
    text += std::to_string(rows[i]);
  }
  return text + "}";
}

bool rowEmpty(const StateMatrix& s, int chunk) {
  for (int d = 0; d < s.devices; ++d)
    if (s.at(chunk, d)) return false;
  return true;
}

// The first device both rows of chunk `chunk` contain, or -1.
int sharedContribution(const StateMatrix& a, const StateMatrix& b, int chunk) {
  for (int d = 0; d < a.devices; ++d)
    if (a.at(chunk, d) && b.at(chunk, d)) return d;
  return -1;
}

StateMatrix sumOf(std::span<const StateMatrix> states) {
  StateMatrix sum = makeEmptyState(states.front().chunks, states.front().devices);
  for (const StateMatrix& s : states)
    for (std::size_t c = 0; c < sum.cells.size(); ++c)
      sum.cells[c] = static_cast<std::uint8_t>(sum.cells[c] | s.cells[c]);
  return sum;
}

bool lessOrEqual(const StateMatrix& a, const StateMatrix& b) {
  for (std::size_t c = 0; c < a.cells.size(); ++c)
    if (a.cells[c] > b.cells[c]) return false;
  return true;
}

RuleResult failRule(Collective collective, std::string why) {
  RuleResult result;
  result.violation = fmt::format("R-{}: {}", collectiveName(collective), why);
  return result;
}

// Premises of R-AllReduce / R-ReduceScatter / R-Reduce (step 1); empty string when they hold.
std::string checkReducible(std::span<const StateMatrix> pre, std::span<const int> names) {
  const std::vector<int> rows0 = nonEmptyRows(pre.front());
  for (std::size_t i = 1; i < pre.size(); ++i) {
    const std::vector<int> rows = nonEmptyRows(pre[i]);
    if (rows != rows0)
      return fmt::format(
          "devices {} and {} hold different chunks ({} vs {}); reducing them would mix chunks",
          nameOf(names, 0), nameOf(names, i), formatRows(rows0), formatRows(rows));
  }
  for (std::size_t i = 0; i < pre.size(); ++i)
    for (std::size_t j = i + 1; j < pre.size(); ++j)
      for (int k : rows0) {
        const int shared = sharedContribution(pre[i], pre[j], k);
        if (shared >= 0)
          return fmt::format(
              "chunk {} of devices {} and {} both contain device {}'s data; it would be "
              "reduced twice",
              k, nameOf(names, i), nameOf(names, j), shared);
      }
  return {};
}

}  // namespace

std::string_view collectiveName(Collective collective) {
  switch (collective) {
    case Collective::allReduce:
      return "AllReduce";
    case Collective::reduceScatter:
      return "ReduceScatter";
    case Collective::allGather:
      return "AllGather";
    case Collective::reduce:
      return "Reduce";
    case Collective::broadcast:
      return "Broadcast";
  }
  return "?";
}

StateMatrix makeEmptyState(int chunks, int devices) {
  CHORUS_INTERNAL_ASSERT(chunks >= 0 && devices >= 0, "negative state shape");
  return {chunks, devices, std::vector<std::uint8_t>(ix(chunks) * ix(devices), 0)};
}

StateMatrix makeState(std::span<const std::string_view> rows) {
  const int devices = rows.empty() ? 0 : static_cast<int>(rows.front().size());
  StateMatrix state = makeEmptyState(static_cast<int>(rows.size()), devices);
  for (std::size_t r = 0; r < rows.size(); ++r) {
    if (static_cast<int>(rows[r].size()) != devices)
      throw ParseError(
          fmt::format("state row {} '{}' has {} columns but row 0 has {}; give "
                      "every row one '0'/'1' per device",
                      r, rows[r], rows[r].size(), devices));
    for (int d = 0; d < devices; ++d) {
      const char c = rows[r][ix(d)];
      if (c != '0' && c != '1')
        throw ParseError(
            fmt::format("state row {} '{}' has '{}' at column {}; use only '0' "
                        "and '1'",
                        r, rows[r], c, d));
      state.set(static_cast<int>(r), d, c == '1');
    }
  }
  return state;
}

StateMatrix makeState(std::initializer_list<std::string_view> rows) {
  return makeState(std::span<const std::string_view>(rows.begin(), rows.size()));
}

std::vector<int> nonEmptyRows(const StateMatrix& state) {
  std::vector<int> rows;
  for (int k = 0; k < state.chunks; ++k)
    if (!rowEmpty(state, k)) rows.push_back(k);
  return rows;
}

std::string formatState(const StateMatrix& state) {
  std::string text;
  for (int k = 0; k < state.chunks; ++k) {
    if (k > 0) text += '/';
    for (int d = 0; d < state.devices; ++d)
      text += state.at(k, d) ? '1' : '0';
  }
  return text;
}

RuleResult applyRule(Collective collective, std::span<const StateMatrix> pre,
                     std::span<const int> names) {
  CHORUS_INTERNAL_ASSERT(!pre.empty(), "a rule needs at least one device");
  CHORUS_INTERNAL_ASSERT(names.empty() || names.size() == pre.size(), "one name per device");
  for (const StateMatrix& s : pre)
    CHORUS_INTERNAL_ASSERT(s.chunks == pre.front().chunks && s.devices == pre.front().devices,
                           "states of one group differ in shape");
  const std::size_t n = pre.size();
  RuleResult result;
  switch (collective) {
    case Collective::allReduce:
    case Collective::reduceScatter:
    case Collective::reduce: {
      std::string why = checkReducible(pre, names);
      if (!why.empty()) return failRule(collective, std::move(why));
      const StateMatrix sum = sumOf(pre);
      if (collective == Collective::allReduce) {
        result.post.assign(n, sum);
      } else if (collective == Collective::reduce) {
        result.post.assign(n, makeEmptyState(sum.chunks, sum.devices));
        result.post.front() = sum;
      } else {
        const std::vector<int> rows = nonEmptyRows(sum);
        if (rows.size() % n != 0)
          return failRule(collective,
                          fmt::format("{} non-empty chunks cannot be scattered evenly over {} "
                                      "devices",
                                      rows.size(), n));
        const std::size_t block = rows.size() / n;
        for (std::size_t i = 0; i < n; ++i) {
          StateMatrix part = makeEmptyState(sum.chunks, sum.devices);
          for (std::size_t r = i * block; r < (i + 1) * block; ++r)
            for (int d = 0; d < sum.devices; ++d)
              part.set(rows[r], d, sum.at(rows[r], d));
          result.post.push_back(std::move(part));
        }
      }
      break;
    }
    case Collective::allGather: {
      std::vector<std::vector<int>> rows;
      for (const StateMatrix& s : pre)
        rows.push_back(nonEmptyRows(s));
      for (std::size_t i = 0; i < n; ++i) {
        if (rows[i].size() != rows[0].size())
          return failRule(
              collective,
              fmt::format("devices {} and {} hold {} and {} chunks; AllGather needs "
                          "equal pieces",
                          nameOf(names, 0), nameOf(names, i), rows[0].size(), rows[i].size()));
        for (std::size_t j = i + 1; j < n; ++j) {
          std::vector<int> common;
          std::set_intersection(rows[i].begin(), rows[i].end(), rows[j].begin(), rows[j].end(),
                                std::back_inserter(common));
          if (!common.empty())
            return failRule(collective,
                            fmt::format("devices {} and {} both hold chunk {}; AllGather needs "
                                        "disjoint pieces",
                                        nameOf(names, i), nameOf(names, j), common.front()));
        }
      }
      result.post.assign(n, sumOf(pre));
      break;
    }
    case Collective::broadcast: {
      bool increases = false;
      for (std::size_t i = 1; i < n; ++i) {
        if (!lessOrEqual(pre[i], pre[0]))
          return failRule(collective,
                          fmt::format("device {} holds data root {} lacks ({} vs {}); the "
                                      "broadcast would lose it",
                                      nameOf(names, i), nameOf(names, 0), formatState(pre[i]),
                                      formatState(pre[0])));
        if (pre[i] != pre[0]) increases = true;
      }
      if (!increases)
        return failRule(collective,
                        fmt::format("every device already holds root {}'s data; the broadcast "
                                    "adds nothing",
                                    nameOf(names, 0)));
      result.post.assign(n, pre[0]);
      break;
    }
  }
  result.applies = true;
  return result;
}

StateContext makeInitialContext(int chunks, int devices) {
  StateContext context;
  for (int d = 0; d < devices; ++d) {
    StateMatrix s = makeEmptyState(chunks, devices);
    for (int k = 0; k < chunks; ++k)
      s.set(k, d);
    context.push_back(std::move(s));
  }
  return context;
}

StateContext makeGoalContext(int chunks, int devices,
                             std::span<const std::vector<int>> reductionGroups) {
  StateContext goal = makeInitialContext(chunks, devices);
  std::vector<bool> seen(ix(devices), false);
  for (const std::vector<int>& group : reductionGroups) {
    StateMatrix s = makeEmptyState(chunks, devices);
    for (int d : group) {
      if (d < 0 || d >= devices)
        throw OptionError(
            fmt::format("synth: reduction group device {} is outside [0, {})", d, devices));
      if (seen[ix(d)])
        throw OptionError(
            fmt::format("synth: device {} is in two reduction groups; groups "
                        "must be disjoint",
                        d));
      seen[ix(d)] = true;
      for (int k = 0; k < chunks; ++k)
        s.set(k, d);
    }
    for (int d : group)
      goal[ix(d)] = s;
  }
  return goal;
}

StepResult applyStep(const StateContext& context, const GroupStep& step) {
  const int devices = static_cast<int>(context.size());
  std::vector<bool> seen(context.size(), false);
  for (std::size_t g = 0; g < step.groups.size(); ++g) {
    if (step.groups[g].empty())
      throw OptionError(
          fmt::format("synth: group {} of a {} step is empty; every group needs a "
                      "device",
                      g, collectiveName(step.collective)));
    for (int d : step.groups[g]) {
      if (d < 0 || d >= devices)
        throw OptionError(
            fmt::format("synth: group {} of a {} step names device {}, outside "
                        "[0, {})",
                        g, collectiveName(step.collective), d, devices));
      if (seen[ix(d)])
        throw OptionError(
            fmt::format("synth: device {} appears twice in a {} step; its groups "
                        "must be disjoint",
                        d, collectiveName(step.collective)));
      seen[ix(d)] = true;
    }
  }
  // Every group's rule first, so a failing step (the common case in enumeration) never copies
  // the context.
  StepResult result;
  std::vector<RuleResult> rules;
  rules.reserve(step.groups.size());
  for (const std::vector<int>& group : step.groups) {
    std::vector<StateMatrix> pre;
    pre.reserve(group.size());
    for (int d : group)
      pre.push_back(context[ix(d)]);
    rules.push_back(applyRule(step.collective, pre, group));
    if (!rules.back().applies) {
      result.violation = std::move(rules.back().violation);
      return result;
    }
  }
  result.after = context;
  for (std::size_t g = 0; g < step.groups.size(); ++g)
    for (std::size_t i = 0; i < step.groups[g].size(); ++i)
      result.after[ix(step.groups[g][i])] = std::move(rules[g].post[i]);
  result.applies = true;
  return result;
}

CheckResult checkProgram(std::span<const GroupStep> steps, const StateContext& initial,
                         const StateContext& goal) {
  CHORUS_INTERNAL_ASSERT(initial.size() == goal.size(), "initial and goal contexts differ in size");
  CheckResult result;
  result.final = initial;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    StepResult step = applyStep(result.final, steps[i]);
    if (!step.applies) {
      result.failedStep = static_cast<int>(i);
      result.reason = fmt::format("step {} ({}): {}", i + 1, collectiveName(steps[i].collective),
                                  step.violation);
      return result;
    }
    result.final = std::move(step.after);
  }
  for (std::size_t d = 0; d < goal.size(); ++d) {
    if (result.final[d] != goal[d]) {
      result.reason = fmt::format("device {} ends with {} but the reduction needs {}", d,
                                  formatState(result.final[d]), formatState(goal[d]));
      return result;
    }
  }
  result.valid = true;
  return result;
}

}  // namespace chorus::synth
