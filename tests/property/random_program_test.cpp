// Property test: random valid DSL programs (random copies, reduces, aggregation, instances and
// parallelize scopes over every built-in collective's buffers) compile, and the verifier finds
// the compiled IR computes exactly the traced values. Program seeds start at the run's
// CHORUS_TEST_SEED (test_seed.h), printed with the command that reruns a failure exactly.
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <random>
#include <string>

#include "chorus/lang.h"
#include "compiler/pipeline.h"
#include "ir/msccl_xml.h"
#include "ir/text_format.h"
#include "test_seed.h"
#include "verify/verify.h"

namespace chorus {
namespace {

using Expected = std::vector<std::vector<std::optional<ir::ChunkValue>>>;  // [rank][output index]

// A collective whose postcondition is whatever the traced program left in the output buffers:
// buffers, precondition and aliasing come from `base`.
class TracedCollective : public ir::Collective {
 public:
  TracedCollective(std::shared_ptr<const ir::Collective> base, Expected expected, int factor = 1)
      : base_(std::move(base)), expected_(std::move(expected)), factor_(factor) {}
  ir::CollectiveKind kind() const override { return ir::CollectiveKind::custom; }
  std::string name() const override { return "traced"; }
  int nranks() const override { return base_->nranks(); }
  int chunkFactor() const override { return base_->chunkFactor(); }
  bool inPlace() const override { return base_->inPlace(); }
  int inputChunks(int rank) const override { return base_->inputChunks(rank); }
  int outputChunks(int rank) const override { return base_->outputChunks(rank); }
  int chunksPerLoop() const override { return base_->chunksPerLoop(); }
  ir::ChunkValue initialInput(int rank, int index) const override {
    return base_->initialInput(rank, index);
  }
  ir::Location canonical(int rank, ir::Location l) const override {
    return base_->canonical(rank, l);
  }
  std::optional<ir::ChunkValue> expectedOutput(int rank, int index) const override {
    const auto& value = expected_[rank][index / factor_];
    if (!value) return std::nullopt;
    std::vector<ir::InputChunk> parts;
    for (auto part : value->parts())
      parts.push_back({part.rank, part.index * factor_ + index % factor_});
    return ir::ChunkValue::sum(std::move(parts));
  }
  std::shared_ptr<const ir::Collective> refined(int factor) const override {
    return std::make_shared<TracedCollective>(base_->refined(factor), expected_, factor_ * factor);
  }

 private:
  std::shared_ptr<const ir::Collective> base_;
  Expected expected_;
  int factor_;
};

struct RandomProgram {
  std::unique_ptr<lang::Program> program;
  std::string summary;
};

RandomProgram makeRandomProgram(std::uint32_t seed) {
  std::mt19937 rng(seed);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const int ranks = pick(2, 5);
  const int cf = pick(1, 3);
  const bool inPlace = pick(0, 1) == 1;
  std::shared_ptr<const ir::Collective> base;
  switch (pick(0, 3)) {
    case 0:
      base = lang::allReduce(ranks, cf, inPlace);
      break;
    case 1:
      base = lang::allGather(ranks, cf, inPlace);
      break;
    case 2:
      base = lang::allToAll(ranks, cf, false);
      break;
    default:
      base = lang::reduceScatter(ranks, cf, inPlace);
      break;
  }
  const int instances = pick(1, 3) == 3 ? 2 : 1;
  RandomProgram out;
  out.summary = base->name() + " ranks=" + std::to_string(ranks) + " cf=" + std::to_string(cf) +
                " inplace=" + std::to_string(inPlace) + " instances=" + std::to_string(instances);
  out.program = std::make_unique<lang::Program>("random", base, lang::ProgramOptions{instances});
  lang::Program& p = *out.program;
  auto size = [&](int rank, lang::Buffer b) {
    if (b == lang::Buffer::input) return base->inputChunks(rank);
    if (b == lang::Buffer::output) return base->outputChunks(rank);
    return 4;
  };
  const int ops = pick(4, 30);
  std::unique_ptr<lang::Program::ParallelScope> scope;
  for (int made = 0, attempts = 0; made < ops && attempts < 2000; ++attempts) {
    if (!scope && pick(0, 15) == 0) scope.reset(new lang::Program::ParallelScope(p.parallelize(2)));
    if (scope && pick(0, 4) == 0) scope.reset();
    const int count = pick(1, 4) == 4 ? 2 : 1;
    const int sr = pick(0, ranks - 1);
    const auto sb = static_cast<lang::Buffer>(pick(0, 2));
    if (size(sr, sb) < count) continue;
    const int si = pick(0, size(sr, sb) - count);
    bool ready = true;
    for (int i = 0; i < count; ++i)
      ready = ready && p.initialized(sr, sb, si + i);
    if (!ready) continue;
    const int dr = pick(0, ranks - 1);
    const auto db = static_cast<lang::Buffer>(pick(0, 2));
    // An out-of-place collective must leave its input unchanged (the verifier's writes-input).
    if (db == lang::Buffer::input && !base->inPlace()) continue;
    if (size(dr, db) < count) continue;
    const int di = pick(0, size(dr, db) - count);
    // Skip overlapping source and destination ranges (after in-place aliasing).
    bool overlap = false;
    for (int i = 0; i < count; ++i)
      for (int j = 0; j < count; ++j)
        overlap = overlap || (sr == dr && base->canonical(sr, {sb, si + i}) ==
                                              base->canonical(dr, {db, di + j}));
    if (overlap) continue;
    auto src = p.chunk(sr, sb, si, count);
    bool canReduce = true;
    for (int i = 0; i < count; ++i)
      canReduce = canReduce && p.initialized(dr, db, di + i);
    if (canReduce && pick(0, 2) == 0)
      p.chunk(dr, db, di, count).reduce(src);
    else
      src.copy(dr, db, di);
    ++made;
  }
  return out;
}

// 150 programs from the test seed on (CHORUS_TEST_SEED=N makes program N the first), then a
// fixed set.
std::vector<std::uint32_t> seeds() {
  std::vector<std::uint32_t> out;
  const std::uint32_t start = testing_support::testSeed();
  for (std::uint32_t i = 0; i < 150; ++i)
    out.push_back(start + i);
  for (std::uint32_t i = 1; i <= 50; ++i)
    out.push_back(i);  // a fixed set as well
  return out;
}

TEST(RandomPrograms, CompiledIrComputesTheTracedValues) {
  for (const auto seed : seeds()) {
    const auto made = makeRandomProgram(seed);
    SCOPED_TRACE("program seed " + std::to_string(seed) + " (" + made.summary + ")");
    const lang::Program& p = *made.program;
    const auto& c = p.collective();
    Expected expected(c.nranks());
    for (int r = 0; r < c.nranks(); ++r)
      for (int i = 0; i < c.outputChunks(r); ++i) {
        auto value = p.valueAt(r, lang::Buffer::output, i);
        expected[r].push_back(value.initialized() ? std::optional(value) : std::nullopt);
      }
    ir::Dag dag = p.dag();
    dag.collective = std::make_shared<TracedCollective>(dag.collective, expected);
    compiler::CompileResult result;
    ASSERT_NO_THROW(result = compiler::compileProgram(dag)) << "compile (with verification)";
    compiler::CompileOptions plain;
    plain.disabledPasses = {"fuse-instructions", "prune-waits"};
    ASSERT_NO_THROW(compiler::compileProgram(dag, plain)) << "compile without optional passes";
    // What the compiler prints parses back to the same IR, and still verifies.
    const auto xml = ir::writeMscclXml(result.algorithm, {.checkLimits = false});
    auto back = ir::readMscclXml(xml, "random.xml");
    ASSERT_EQ(back.size(), 1u);
    back[0].customName = result.algorithm.customName;  // MSCCL XML has no field for it
    EXPECT_EQ(ir::printText(back[0]), ir::printText(result.algorithm));
    verify::VerifyOptions options;
    options.collective =
        dag.collective->refined(result.algorithm.chunksPerLoop / c.chunksPerLoop());
    EXPECT_TRUE(verify::verifyAlgorithm(back[0], options).ok());
    if (::testing::Test::HasFailure()) return;
  }
}

}  // namespace
}  // namespace chorus
