// P² reduction programs (P² §3.3–§3.5): the reduction language slice × form ×
// collective over a synthesis hierarchy built from the reduction axes of a parallelism matrix,
// its device groups (Table 2), printing and parsing in P²'s notation, syntax-guided
// enumeration of the semantically valid programs in increasing size, and each program's
// concrete group collectives for lowering and costing. The second stage of `chorus synth
// reduction`, after p2_placement.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "synth/p2_placement.h"
#include "synth/p2_semantics.h"

namespace chorus::synth {

// A level of a synthesis hierarchy: the reduction axes' factors on one system level.
struct SynthesisLevel {
  std::string name;      // the system level's name; the root's is "root" or that of a size-1
                         // outermost system level ("rack" for Figure 2a)
  int size = 1;          // ≥ 1; only the root has size 1
  int systemLevel = -1;  // index in the system hierarchy; -1 for an added root
  friend bool operator==(const SynthesisLevel&, const SynthesisLevel&) = default;
};

// A synthesis hierarchy, root first (levels[0].size == 1). Its devices are the members of one
// reduction group, numbered in mixed radix over the level coordinates (outermost most
// significant): the reduction index of ReductionLayout.
struct SynthesisHierarchy {
  std::vector<SynthesisLevel> levels;
  friend bool operator==(const SynthesisHierarchy&, const SynthesisHierarchy&) = default;
};

// The synthesis hierarchy (d) of P² §2.5/§3.4 for `layout` on `system`: per system level
// the product of the reduction axes' factors (Table 1, "collapsed"), levels of factor 1
// dropped (they form no new groups), and a root of size 1 prepended (Appendix B.1).
// Precondition: layout comes from layoutReduction on a matrix of `system`.
SynthesisHierarchy synthesisHierarchyOf(const SystemHierarchy& system,
                                        const ReductionLayout& layout);

// A hierarchy from explicit (name, size) levels, the root prepended (tests, Figure 2a's
// [(server,2),(CPU,2),(GPU,4)] under a "rack" root). Throws chorus::OptionError on size < 2.
SynthesisHierarchy makeSynthesisHierarchy(std::string rootName,
                                          std::span<const HierarchyLevel> levels);

// The number of devices (product of the level sizes).
int synthesisDeviceCount(const SynthesisHierarchy& hierarchy);

// "[(root, 1), (server, 2), (GPU, 2)]".
std::string formatSynthesisHierarchy(const SynthesisHierarchy& hierarchy);

// form := InsideGroup | Parallel(e) | Master(e)  (P² §3.3).
enum class FormKind : std::uint8_t { insideGroup, parallel, master };

struct Form {
  FormKind kind = FormKind::insideGroup;
  int level = 0;  // e, a synthesis level strictly above the slice; unused for InsideGroup
  friend bool operator==(const Form&, const Form&) = default;
};

// reduction := slice × form × C; `slice` is a synthesis level index.
struct Instruction {
  int slice = 0;
  Form form;
  Collective collective = Collective::allReduce;
  friend bool operator==(const Instruction&, const Instruction&) = default;
};

// program := [reduction]
struct ReductionProgram {
  std::vector<Instruction> instructions;
  friend bool operator==(const ReductionProgram&, const ReductionProgram&) = default;
};

// The device groups of (slice, form) on `hierarchy` (Table 2), each group ascending, groups
// ordered by their first device. With device coordinates c_1..c_L (c_0 the root):
//   InsideGroup: the devices under one slice node (same c_1..c_slice);
//   Parallel(e): the k-th devices of the slice groups under one e node (same c_1..c_e and
//                c_slice+1..c_L);
//   Master(e):   the Parallel(e) groups of first devices (c_slice+1..c_L all 0).
// Throws chorus::OptionError when the slice or form level is out of range, or the form's level
// is not strictly above the slice.
std::vector<std::vector<int>> deriveGroups(const SynthesisHierarchy& hierarchy,
                                           const Instruction& instruction);

// Program size (P² §3.5): one per instruction plus one per form argument, so
// InsideGroup instructions count 1 and Parallel(e)/Master(e) ones 2. With a limit of 5 this
// reproduces the paper's program counts (Appendix A: 3 per one-level and 47 per two-level
// synthesis hierarchy).
int instructionSize(const Instruction& instruction);
int programSize(const ReductionProgram& program);

// "(server, Master(rack), AllReduce)"; a program joins them with "; ".
std::string formatInstruction(const SynthesisHierarchy& hierarchy, const Instruction& instruction);
std::string formatProgram(const SynthesisHierarchy& hierarchy, const ReductionProgram& program);

// Parses formatProgram's output (level names from `hierarchy`; blanks ignored; "" is the empty
// program). Throws chorus::ParseError naming the offending text, the expected token and the
// hierarchy's level names; chorus::OptionError when an instruction is malformed (deriveGroups).
ReductionProgram parseProgram(const SynthesisHierarchy& hierarchy, std::string_view text);

// Runs `program` on the synthesis view (one reduction group: R devices, R chunks) and compares
// with the reduction's goal (every device holds every chunk summed over all R devices).
CheckResult checkReductionProgram(const SynthesisHierarchy& hierarchy,
                                  const ReductionProgram& program);

// One group of a collective call: its devices (the first is the root of Reduce/Broadcast) and
// the chunks, out of `ProgramStep::totalChunks`, the call works on: the chunks the members hold
// before the call (ReduceScatter leaves each member a 1/|devices| block of them, AllGather
// ends with all of them).
struct CollectiveGroup {
  std::vector<int> devices;
  std::vector<int> chunks;
  friend bool operator==(const CollectiveGroup&, const CollectiveGroup&) = default;
};

// One step of a program as group collectives, for lowering and costing.
struct ProgramStep {
  Instruction instruction;
  Collective collective = Collective::allReduce;
  std::vector<CollectiveGroup> groups;
  int totalChunks = 1;      // chunks of a device's whole buffer (R)
  double dataFraction = 0;  // largest |chunks| / totalChunks over the groups
};

// The steps of a valid `program` on the synthesis view (devices are reduction indices).
// Throws chorus::OptionError with checkReductionProgram's reason when it is not valid.
std::vector<ProgramStep> describeProgram(const SynthesisHierarchy& hierarchy,
                                         const ReductionProgram& program);

// The steps of a valid `program` on the whole system (P² §3.4, lowering L): every
// synthesis-view group is applied in each reduction group of `layout` (groups ordered by
// reduction group, then as in describeProgram), devices mapped to device ids. Throws like
// describeProgram; precondition: hierarchy == synthesisHierarchyOf(system, layout).
std::vector<ProgramStep> placeProgram(const SynthesisHierarchy& hierarchy,
                                      const ReductionLayout& layout,
                                      const ReductionProgram& program);

// The steps as semantic GroupSteps (for checkProgram on the whole system).
std::vector<GroupStep> groupStepsOf(std::span<const ProgramStep> steps);

struct EnumerateOptions {
  int sizeLimit = 5;            // P² §4 uses 5
  std::size_t maxPrograms = 0;  // stop after this many; 0 = all
};

// Every semantically valid program of size ≤ options.sizeLimit, by increasing size, and within
// one size in the order of the candidate instructions (below). Thread-safe (pure).
//
// Algorithm (P² §3.5, syntax-guided enumeration):
//  1. Candidate instructions: every slice, every form whose level is strictly above it (root:
//     InsideGroup only), every collective. Drop those whose groups are single devices (they
//     reduce nothing) and those whose groups equal an earlier candidate's with the same
//     collective (e.g. (GPU, Parallel(CPU)) is (CPU, InsideGroup)), keeping the smaller size.
//  2. For size s = 0, 1, …, limit: depth-first from the initial state, extend a prefix by each
//     candidate that fits the remaining size and whose Figure 8 rule applies to every group
//     (an invalid step can never be repaired: rows only grow, P² Appendix B.3); record
//     the prefix when the remaining size is 0 and the state is the goal; never extend a
//     prefix that reached the goal (no rule applies there).
std::vector<ReductionProgram> enumeratePrograms(const SynthesisHierarchy& hierarchy,
                                                const EnumerateOptions& options = {});

// One placement with its synthesized programs.
struct PlacementCandidate {
  ParallelismMatrix matrix;
  ReductionLayout layout;
  SynthesisHierarchy hierarchy;
  std::vector<ReductionProgram> programs;
};

// Every parallelism matrix of `axisSizes` on `system` and, for each, the valid reduction
// programs over `reductionAxes`. Throws like enumerateParallelismMatrices and layoutReduction.
std::vector<PlacementCandidate> synthesizeReductions(const SystemHierarchy& system,
                                                     std::span<const int> axisSizes,
                                                     std::span<const int> reductionAxes,
                                                     const EnumerateOptions& options = {});

}  // namespace chorus::synth
