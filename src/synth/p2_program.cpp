#include "synth/p2_program.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <utility>

#include "support/error.h"
#include "support/index.h"

namespace chorus::synth {
namespace {

int levelCount(const SynthesisHierarchy& hierarchy) {
  return static_cast<int>(hierarchy.levels.size());
}

// digits[level] of every device (digit 0, the root's, is always 0).
std::vector<std::vector<int>> coordinatesOf(const SynthesisHierarchy& hierarchy) {
  const int devices = synthesisDeviceCount(hierarchy);
  const int levels = levelCount(hierarchy);
  std::vector<std::vector<int>> digits(ix(devices), std::vector<int>(ix(levels), 0));
  for (int v = 0; v < devices; ++v) {
    int rest = v;
    for (int level = levels - 1; level >= 0; --level) {
      digits[ix(v)][ix(level)] = rest % hierarchy.levels[ix(level)].size;
      rest /= hierarchy.levels[ix(level)].size;
    }
  }
  return digits;
}

void checkInstruction(const SynthesisHierarchy& hierarchy, const Instruction& instruction) {
  const int levels = levelCount(hierarchy);
  if (instruction.slice < 0 || instruction.slice >= levels)
    throw OptionError(
        fmt::format("synth: slice level {} is outside the synthesis hierarchy {} "
                    "(levels 0..{})",
                    instruction.slice, formatSynthesisHierarchy(hierarchy), levels - 1));
  if (instruction.form.kind == FormKind::insideGroup) return;
  const std::string& slice = hierarchy.levels[ix(instruction.slice)].name;
  if (instruction.form.level < 0 || instruction.form.level >= instruction.slice)
    throw OptionError(
        fmt::format("synth: the form of a '{}' slice names level {}, which is not above it in {}; "
                    "Parallel(e) and Master(e) need e to be an ancestor of the slice (P² §3.3)",
                    slice, instruction.form.level, formatSynthesisHierarchy(hierarchy)));
}

std::string formName(const SynthesisHierarchy& hierarchy, const Form& form) {
  switch (form.kind) {
    case FormKind::insideGroup:
      return "InsideGroup";
    case FormKind::parallel:
      return fmt::format("Parallel({})", hierarchy.levels[ix(form.level)].name);
    case FormKind::master:
      return fmt::format("Master({})", hierarchy.levels[ix(form.level)].name);
  }
  return "?";
}

// A small recursive-descent reader for parseProgram.
class ProgramReader {
 public:
  ProgramReader(const SynthesisHierarchy& hierarchy, std::string_view text)
      : hierarchy_(hierarchy), text_(text) {}

  ReductionProgram read() {
    ReductionProgram program;
    skipBlanks();
    if (pos_ == text_.size()) return program;
    while (true) {
      program.instructions.push_back(readInstruction());
      skipBlanks();
      if (pos_ == text_.size()) break;
      expect(';');
    }
    for (const Instruction& instruction : program.instructions)
      checkInstruction(hierarchy_, instruction);
    return program;
  }

 private:
  void skipBlanks() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_])))
      ++pos_;
  }

  [[noreturn]] void fail(std::string_view expected) const {
    std::string names;
    for (const SynthesisLevel& level : hierarchy_.levels)
      names += (names.empty() ? "" : ", ") + level.name;
    throw ParseError(fmt::format(
        "synth: cannot parse reduction program at column {} ('{}'): expected {}; write "
        "instructions like (slice, InsideGroup|Parallel(level)|Master(level), "
        "AllReduce|ReduceScatter|AllGather|Reduce|Broadcast) separated by ';' with levels {}",
        pos_ + 1, text_.substr(pos_, 20), expected, names));
  }

  void expect(char c) {
    skipBlanks();
    if (pos_ >= text_.size() || text_[pos_] != c) fail(fmt::format("'{}'", c));
    ++pos_;
  }

  std::string_view readWord() {
    skipBlanks();
    const std::size_t start = pos_;
    while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) ||
                                   text_[pos_] == '_' || text_[pos_] == '-' || text_[pos_] == '.'))
      ++pos_;
    if (pos_ == start) fail("a name");
    return text_.substr(start, pos_ - start);
  }

  int readLevel() {
    const std::size_t start = pos_;
    const std::string_view name = readWord();
    for (int level = 0; level < levelCount(hierarchy_); ++level)
      if (hierarchy_.levels[ix(level)].name == name) return level;
    pos_ = start;
    skipBlanks();
    fail("a level name");
  }

  Instruction readInstruction() {
    Instruction instruction;
    expect('(');
    instruction.slice = readLevel();
    expect(',');
    const std::size_t formStart = pos_;
    const std::string_view form = readWord();
    if (form == "InsideGroup") {
      instruction.form = {FormKind::insideGroup, 0};
    } else if (form == "Parallel" || form == "Master") {
      expect('(');
      instruction.form = {form == "Parallel" ? FormKind::parallel : FormKind::master, readLevel()};
      expect(')');
    } else {
      pos_ = formStart;
      skipBlanks();
      fail("InsideGroup, Parallel(level) or Master(level)");
    }
    expect(',');
    const std::size_t collectiveStart = pos_;
    const std::string_view collective = readWord();
    bool known = false;
    for (Collective c : kCollectives)
      if (collectiveName(c) == collective) {
        instruction.collective = c;
        known = true;
      }
    if (!known) {
      pos_ = collectiveStart;
      skipBlanks();
      fail("AllReduce, ReduceScatter, AllGather, Reduce or Broadcast");
    }
    expect(')');
    return instruction;
  }

  const SynthesisHierarchy& hierarchy_;
  std::string_view text_;
  std::size_t pos_ = 0;
};

std::vector<int> unionOfRows(const StateContext& context, const std::vector<int>& devices) {
  std::vector<int> rows;
  for (int d : devices) {
    const std::vector<int> mine = nonEmptyRows(context[ix(d)]);
    rows.insert(rows.end(), mine.begin(), mine.end());
  }
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  return rows;
}

struct Candidate {
  Instruction instruction;
  GroupStep step;
  int size = 1;
};

// Step 1 of enumeratePrograms.
std::vector<Candidate> candidatesOf(const SynthesisHierarchy& hierarchy) {
  struct Shape {
    Form form;
    int slice = 0;
    std::vector<std::vector<int>> groups;
  };
  std::vector<Shape> shapes;
  for (int slice = 0; slice < levelCount(hierarchy); ++slice) {
    std::vector<Form> forms = {{FormKind::insideGroup, 0}};
    for (int e = 0; e < slice; ++e)
      forms.push_back({FormKind::parallel, e});
    for (int e = 0; e < slice; ++e)
      forms.push_back({FormKind::master, e});
    for (const Form& form : forms) {
      Instruction probe{slice, form, Collective::allReduce};
      std::vector<std::vector<int>> groups = deriveGroups(hierarchy, probe);
      if (groups.empty() || groups.front().size() < 2) continue;
      shapes.push_back({form, slice, std::move(groups)});
    }
  }
  // Smaller instructions first, so a duplicate keeps the smaller spelling.
  std::stable_sort(shapes.begin(), shapes.end(), [](const Shape& a, const Shape& b) {
    return instructionSize({a.slice, a.form, Collective::allReduce}) <
           instructionSize({b.slice, b.form, Collective::allReduce});
  });
  std::vector<Shape> distinct;
  for (Shape& shape : shapes) {
    const bool seen = std::any_of(distinct.begin(), distinct.end(),
                                  [&](const Shape& other) { return other.groups == shape.groups; });
    if (!seen) distinct.push_back(std::move(shape));
  }
  std::vector<Candidate> candidates;
  for (const Shape& shape : distinct)
    for (Collective collective : kCollectives) {
      Instruction instruction{shape.slice, shape.form, collective};
      candidates.push_back(
          {instruction, GroupStep{collective, shape.groups}, instructionSize(instruction)});
    }
  return candidates;
}

// Step 2 of enumeratePrograms.
struct ProgramSearch {
  const std::vector<Candidate>& candidates;
  const StateContext& goal;
  std::size_t maxPrograms = 0;
  std::vector<Instruction> prefix;
  std::vector<ReductionProgram> found;

  bool full() const { return maxPrograms != 0 && found.size() >= maxPrograms; }

  void search(const StateContext& state, int budget) {
    if (full()) return;
    if (state == goal) {
      if (budget == 0) found.push_back({prefix});
      return;
    }
    if (budget == 0) return;
    for (const Candidate& candidate : candidates) {
      if (candidate.size > budget) continue;
      StepResult step = applyStep(state, candidate.step);
      if (!step.applies) continue;
      prefix.push_back(candidate.instruction);
      search(step.after, budget - candidate.size);
      prefix.pop_back();
      if (full()) return;
    }
  }
};

}  // namespace

SynthesisHierarchy synthesisHierarchyOf(const SystemHierarchy& system,
                                        const ReductionLayout& layout) {
  CHORUS_INTERNAL_ASSERT(layout.levelFactors.size() == system.levels.size(),
                         "reduction layout and system hierarchy differ in levels");
  SynthesisHierarchy hierarchy;
  const bool namedRoot = !system.levels.empty() && system.levels.front().size == 1;
  hierarchy.levels.push_back(
      {namedRoot ? system.levels.front().name : "root", 1, namedRoot ? 0 : -1});
  for (std::size_t j = 0; j < system.levels.size(); ++j)
    if (layout.levelFactors[j] > 1)
      hierarchy.levels.push_back(
          {system.levels[j].name, layout.levelFactors[j], static_cast<int>(j)});
  return hierarchy;
}

SynthesisHierarchy makeSynthesisHierarchy(std::string rootName,
                                          std::span<const HierarchyLevel> levels) {
  SynthesisHierarchy hierarchy;
  hierarchy.levels.push_back({std::move(rootName), 1, -1});
  for (std::size_t j = 0; j < levels.size(); ++j) {
    if (levels[j].size < 2)
      throw OptionError(
          fmt::format("synth: synthesis level '{}' has size {}; levels below the "
                      "root need size ≥ 2 (drop levels of size 1)",
                      levels[j].name, levels[j].size));
    hierarchy.levels.push_back({levels[j].name, levels[j].size, static_cast<int>(j)});
  }
  return hierarchy;
}

int synthesisDeviceCount(const SynthesisHierarchy& hierarchy) {
  int count = 1;
  for (const SynthesisLevel& level : hierarchy.levels)
    count *= level.size;
  return count;
}

std::string formatSynthesisHierarchy(const SynthesisHierarchy& hierarchy) {
  std::string text = "[";
  for (std::size_t i = 0; i < hierarchy.levels.size(); ++i) {
    if (i > 0) text += ", ";
    text += fmt::format("({}, {})", hierarchy.levels[i].name, hierarchy.levels[i].size);
  }
  return text + "]";
}

std::vector<std::vector<int>> deriveGroups(const SynthesisHierarchy& hierarchy,
                                           const Instruction& instruction) {
  checkInstruction(hierarchy, instruction);
  const int levels = levelCount(hierarchy);
  const int slice = instruction.slice;
  const std::vector<std::vector<int>> digits = coordinatesOf(hierarchy);
  std::map<std::vector<int>, std::vector<int>> byKey;
  for (int v = 0; v < static_cast<int>(digits.size()); ++v) {
    const std::vector<int>& c = digits[ix(v)];
    std::vector<int> key;
    if (instruction.form.kind == FormKind::insideGroup) {
      key.assign(c.begin() + 1, c.begin() + slice + 1);
    } else {
      const bool first = std::all_of(c.begin() + slice + 1, c.end(), [](int d) { return d == 0; });
      if (instruction.form.kind == FormKind::master && !first) continue;
      key.assign(c.begin() + 1, c.begin() + instruction.form.level + 1);
      key.insert(key.end(), c.begin() + slice + 1, c.begin() + levels);
    }
    byKey[key].push_back(v);
  }
  std::vector<std::vector<int>> groups;
  for (auto& [key, members] : byKey)
    groups.push_back(std::move(members));
  std::sort(groups.begin(), groups.end(), [](const std::vector<int>& a, const std::vector<int>& b) {
    return a.front() < b.front();
  });
  return groups;
}

int instructionSize(const Instruction& instruction) {
  return instruction.form.kind == FormKind::insideGroup ? 1 : 2;
}

int programSize(const ReductionProgram& program) {
  int size = 0;
  for (const Instruction& instruction : program.instructions)
    size += instructionSize(instruction);
  return size;
}

std::string formatInstruction(const SynthesisHierarchy& hierarchy, const Instruction& instruction) {
  checkInstruction(hierarchy, instruction);
  return fmt::format("({}, {}, {})", hierarchy.levels[ix(instruction.slice)].name,
                     formName(hierarchy, instruction.form), collectiveName(instruction.collective));
}

std::string formatProgram(const SynthesisHierarchy& hierarchy, const ReductionProgram& program) {
  std::string text;
  for (std::size_t i = 0; i < program.instructions.size(); ++i) {
    if (i > 0) text += "; ";
    text += formatInstruction(hierarchy, program.instructions[i]);
  }
  return text;
}

ReductionProgram parseProgram(const SynthesisHierarchy& hierarchy, std::string_view text) {
  return ProgramReader(hierarchy, text).read();
}

CheckResult checkReductionProgram(const SynthesisHierarchy& hierarchy,
                                  const ReductionProgram& program) {
  const int devices = synthesisDeviceCount(hierarchy);
  std::vector<GroupStep> steps;
  for (const Instruction& instruction : program.instructions)
    steps.push_back({instruction.collective, deriveGroups(hierarchy, instruction)});
  std::vector<int> all(ix(devices));
  for (int v = 0; v < devices; ++v)
    all[ix(v)] = v;
  const std::vector<std::vector<int>> oneGroup = {all};
  return checkProgram(steps, makeInitialContext(devices, devices),
                      makeGoalContext(devices, devices, oneGroup));
}

std::vector<ProgramStep> describeProgram(const SynthesisHierarchy& hierarchy,
                                         const ReductionProgram& program) {
  const CheckResult check = checkReductionProgram(hierarchy, program);
  if (!check.valid)
    throw OptionError(fmt::format("synth: the reduction program '{}' is not valid on {}: {}",
                                  formatProgram(hierarchy, program),
                                  formatSynthesisHierarchy(hierarchy), check.reason));
  const int devices = synthesisDeviceCount(hierarchy);
  StateContext context = makeInitialContext(devices, devices);
  std::vector<ProgramStep> steps;
  for (const Instruction& instruction : program.instructions) {
    ProgramStep step;
    step.instruction = instruction;
    step.collective = instruction.collective;
    step.totalChunks = devices;
    GroupStep groupStep{instruction.collective, deriveGroups(hierarchy, instruction)};
    for (const std::vector<int>& group : groupStep.groups) {
      CollectiveGroup call{group, unionOfRows(context, group)};
      step.dataFraction = std::max(step.dataFraction, static_cast<double>(call.chunks.size()) /
                                                          static_cast<double>(devices));
      step.groups.push_back(std::move(call));
    }
    StepResult applied = applyStep(context, groupStep);
    CHORUS_INTERNAL_ASSERT(applied.applies, "a checked program failed on replay");
    context = std::move(applied.after);
    steps.push_back(std::move(step));
  }
  return steps;
}

std::vector<ProgramStep> placeProgram(const SynthesisHierarchy& hierarchy,
                                      const ReductionLayout& layout,
                                      const ReductionProgram& program) {
  const int devices = synthesisDeviceCount(hierarchy);
  for (const std::vector<int>& group : layout.groups)
    CHORUS_INTERNAL_ASSERT(static_cast<int>(group.size()) == devices,
                           "reduction layout does not match the synthesis hierarchy");
  std::vector<ProgramStep> steps = describeProgram(hierarchy, program);
  for (ProgramStep& step : steps) {
    std::vector<CollectiveGroup> placed;
    for (const std::vector<int>& reductionGroup : layout.groups)
      for (const CollectiveGroup& group : step.groups) {
        CollectiveGroup call;
        call.chunks = group.chunks;
        for (int v : group.devices)
          call.devices.push_back(reductionGroup[ix(v)]);
        placed.push_back(std::move(call));
      }
    step.groups = std::move(placed);
  }
  return steps;
}

std::vector<GroupStep> groupStepsOf(std::span<const ProgramStep> steps) {
  std::vector<GroupStep> out;
  for (const ProgramStep& step : steps) {
    GroupStep groupStep{step.collective, {}};
    for (const CollectiveGroup& group : step.groups)
      groupStep.groups.push_back(group.devices);
    out.push_back(std::move(groupStep));
  }
  return out;
}

std::vector<ReductionProgram> enumeratePrograms(const SynthesisHierarchy& hierarchy,
                                                const EnumerateOptions& options) {
  if (options.sizeLimit < 0)
    throw OptionError(fmt::format("synth: program size limit {} must be ≥ 0", options.sizeLimit));
  const int devices = synthesisDeviceCount(hierarchy);
  const std::vector<Candidate> candidates = candidatesOf(hierarchy);
  std::vector<int> all(ix(devices));
  for (int v = 0; v < devices; ++v)
    all[ix(v)] = v;
  const std::vector<std::vector<int>> oneGroup = {all};
  const StateContext initial = makeInitialContext(devices, devices);
  const StateContext goal = makeGoalContext(devices, devices, oneGroup);
  ProgramSearch search{candidates, goal, options.maxPrograms, {}, {}};
  for (int size = 0; size <= options.sizeLimit && !search.full(); ++size)
    search.search(initial, size);
  return std::move(search.found);
}

std::vector<PlacementCandidate> synthesizeReductions(const SystemHierarchy& system,
                                                     std::span<const int> axisSizes,
                                                     std::span<const int> reductionAxes,
                                                     const EnumerateOptions& options) {
  std::vector<PlacementCandidate> placements;
  for (ParallelismMatrix& matrix : enumerateParallelismMatrices(system, axisSizes)) {
    PlacementCandidate candidate;
    candidate.layout = layoutReduction(matrix, reductionAxes);
    candidate.hierarchy = synthesisHierarchyOf(system, candidate.layout);
    candidate.programs = enumeratePrograms(candidate.hierarchy, options);
    candidate.matrix = std::move(matrix);
    placements.push_back(std::move(candidate));
  }
  return placements;
}

}  // namespace chorus::synth
