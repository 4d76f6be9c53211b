// P² state-matrix semantics of collectives (P² §3.2, Figures 7 and 8): device states as
// boolean chunk × device matrices, the Hoare triples {G1} C {G2} of AllReduce, ReduceScatter,
// AllGather, Reduce and Broadcast over device groups, and a checker that runs a sequence of
// group collectives on the abstract state and decides whether it implements a reduction.
// Used by the synthesizer (p2_program.h) to keep only semantically valid programs.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace chorus::synth {

enum class Collective : std::uint8_t { allReduce, reduceScatter, allGather, reduce, broadcast };

inline constexpr Collective kCollectives[] = {Collective::allReduce, Collective::reduceScatter,
                                              Collective::allGather, Collective::reduce,
                                              Collective::broadcast};

// "AllReduce", "ReduceScatter", "AllGather", "Reduce", "Broadcast" (the paper's spelling).
std::string_view collectiveName(Collective collective);

// A device state s (Figure 7): the data is split into `chunks` chunks; at(i, j) is true when
// chunk i of this device holds (is reduced from) device j's original chunk i. A row with no
// entry is a chunk the device does not hold. The paper uses chunks == devices; the checker
// allows any count (a lowered program keeps the synthesis view's chunk count).
struct StateMatrix {
  int chunks = 0;
  int devices = 0;
  std::vector<std::uint8_t> cells;  // row-major, chunks × devices, 0 or 1

  bool at(int chunk, int device) const {
    return cells[static_cast<std::size_t>(chunk * devices + device)] != 0;
  }
  void set(int chunk, int device, bool value = true) {
    cells[static_cast<std::size_t>(chunk * devices + device)] = value ? 1 : 0;
  }
  friend bool operator==(const StateMatrix&, const StateMatrix&) = default;
};

// An all-zero state ({} in Figure 8).
StateMatrix makeEmptyState(int chunks, int devices);

// A state from rows of '0'/'1' characters, one string per chunk (tests, examples):
// makeState({"1100", "0000"}) is 2 chunks × 4 devices. Throws chorus::ParseError on other
// characters or rows of different lengths.
StateMatrix makeState(std::span<const std::string_view> rows);
StateMatrix makeState(std::initializer_list<std::string_view> rows);

// The indices of the non-empty rows (s.rows in Figure 8), ascending.
std::vector<int> nonEmptyRows(const StateMatrix& state);

// "1100/0110/0011/0000": the rows, '/'-separated.
std::string formatState(const StateMatrix& state);

// The outcome of a Hoare triple: when the rule's preconditions hold, `applies` and the
// post-condition states (same order as the pre-states); otherwise `violation` names the rule,
// the failed premise and the devices.
struct RuleResult {
  bool applies = false;
  std::string violation;
  std::vector<StateMatrix> post;
};

// Applies rule R-<collective> of Figure 8 to one device group. pre[0] is the group's first
// device (the root of Reduce and Broadcast, P² §3.2); ReduceScatter gives the i-th
// device the i-th block of the sum's non-empty rows. `names` (optional, same size as `pre`)
// are the device ids used in messages; positions otherwise. Preconditions: pre is not empty,
// all states have the same shape. Thread-safe (pure).
//
// Algorithm (P² Figure 8; s.rows = non-empty rows, ⊎ = sum, ⊛ = disjoint):
//  1. AllReduce, ReduceScatter, Reduce: every s_i has the same rows, and for each chunk k the
//     rows s_i[k] are pairwise disjoint (never reduce different chunks, never reduce the same
//     contribution twice). s = ⊎ s_i. AllReduce gives s to all; ReduceScatter gives device i
//     scatter(s, i)[i] (fails unless the device count divides |s.rows|); Reduce gives s to
//     the first device and {} to the rest.
//  2. AllGather: the s_i.rows are pairwise disjoint and of equal size; all get ⊎ s_i.
//  3. Broadcast: s_i ≤ s_0 for every i and s_i < s_0 for some i (information increases);
//     all get s_0.
RuleResult applyRule(Collective collective, std::span<const StateMatrix> pre,
                     std::span<const int> names = {});

// A state context G: device id → state.
using StateContext = std::vector<StateMatrix>;

// One step of a reduction program on concrete devices: `collective` run by each group at once.
// Groups are disjoint; a group's first device is its root. Devices in no group keep their
// states (P² §3.3, the semantics of a reduction instruction).
struct GroupStep {
  Collective collective = Collective::allReduce;
  std::vector<std::vector<int>> groups;
};

// The initial context (P² §3.5): device d holds all its own data, column d all ones.
StateContext makeInitialContext(int chunks, int devices);

// The goal of a reduction: every device of a group holds every chunk reduced from exactly the
// group's devices (all rows, the group's columns). Devices in no group keep their initial
// state. Throws chorus::OptionError when a device is out of range or in two groups.
StateContext makeGoalContext(int chunks, int devices,
                             std::span<const std::vector<int>> reductionGroups);

struct StepResult {
  bool applies = false;
  std::string violation;  // first failing group's rule violation
  StateContext after;     // valid when applies
};

// {G_i, G} step {G'_i, G}: applies the rule to every group of `step`. Throws
// chorus::OptionError when the step is malformed (an empty group, a device out of range or in
// two groups), naming the device; a semantic failure is a result, not an error.
StepResult applyStep(const StateContext& context, const GroupStep& step);

struct CheckResult {
  bool valid = false;   // every step applies and the final context is the goal
  int failedStep = -1;  // index of the step whose rule failed; -1 when none did
  std::string reason;   // why not valid: the violation, or which device misses the goal
  StateContext final;   // the context after the last step that applied
};

// Runs `steps` from `initial` and compares the final context with `goal` (a reduction program
// "implements the requested reduction" iff valid). Throws like applyStep.
CheckResult checkProgram(std::span<const GroupStep> steps, const StateContext& initial,
                         const StateContext& goal);

}  // namespace chorus::synth
