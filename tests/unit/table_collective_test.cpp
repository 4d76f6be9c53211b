// Custom collectives defined by tables (ir/table_collective.h): their checks, refinement, and
// registration so that ir::collectiveOf finds them from a plan's name.
#include "ir/table_collective.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "chorus/error.h"
#include "chorus/lang.h"

namespace chorus::ir {
namespace {

using ::testing::HasSubstr;

// Rank r's output chunk i must hold input chunk i of rank r-1 (a rotation), 2 chunks each.
CollectiveTable rotation(const std::string& name, int ranks) {
  CollectiveTable table;
  table.name = name;
  table.nranks = ranks;
  for (int r = 0; r < ranks; ++r) {
    table.initial.push_back({ChunkValue::of({r, 0}), ChunkValue::of({r, 1})});
    table.expected.push_back({ChunkValue::of({(r + ranks - 1) % ranks, 0}),
                              ChunkValue::of({(r + ranks - 1) % ranks, 1})});
  }
  return table;
}

TEST(TableCollective, AnswersFromItsTables) {
  const auto c = makeTableCollective(rotation("table-rotation", 3));
  EXPECT_EQ(c->kind(), CollectiveKind::custom);
  EXPECT_EQ(c->name(), "table-rotation");
  EXPECT_FALSE(c->inPlace());
  EXPECT_EQ(c->chunkFactor(), 2);
  EXPECT_EQ(c->chunksPerLoop(), 2);
  EXPECT_EQ(c->initialInput(1, 1), ChunkValue::of({1, 1}));
  EXPECT_EQ(c->expectedOutput(0, 1), ChunkValue::of({2, 1}));
  EXPECT_FALSE(c->initialInput(1, 2).initialized());
}

TEST(TableCollective, RefinesEveryChunk) {
  const auto refined = makeTableCollective(rotation("table-rotation", 3))->refined(3);
  EXPECT_EQ(refined->chunkFactor(), 6);
  EXPECT_EQ(refined->inputChunks(0), 6);
  EXPECT_EQ(refined->initialInput(2, 4), ChunkValue::of({2, 4}));
  EXPECT_EQ(refined->expectedOutput(0, 5), ChunkValue::of({2, 5}));
}

TEST(TableCollective, RejectsBadTables) {
  CollectiveTable wrongRows = rotation("t", 3);
  wrongRows.expected.pop_back();
  EXPECT_THROW(makeTableCollective(wrongRows), OptionError);
  CollectiveTable foreignInput = rotation("t", 3);
  foreignInput.initial[0][1] = ChunkValue::of({1, 1});  // rank 0 cannot start with rank 1's
  EXPECT_THROW(makeTableCollective(foreignInput), OptionError);
  EXPECT_THROW(makeTableCollective(rotation("alltonext", 3)), OptionError);  // chorus's own
  EXPECT_THROW(makeTableCollective(rotation("group-reduction:0,1,2", 3)), OptionError);
  CollectiveTable missingSource = rotation("t", 3);
  missingSource.initial[2][0] = ChunkValue();  // unused, but rank 0 expects it
  try {
    makeTableCollective(missingSource);
    FAIL() << "expected OptionError";
  } catch (const OptionError& e) {
    EXPECT_THAT(e.what(), HasSubstr("rank 0 output[0] expects in(2,0)"));
  }
}

TEST(TableCollective, RegisteredByNameForPlans) {
  registerTableCollective(makeTableCollective(rotation("table-rotation-registered", 3)));
  Algorithm plan;
  plan.name = "some plan";
  plan.collective = CollectiveKind::custom;
  plan.customName = "table-rotation-registered";
  plan.nranks = 3;
  plan.chunksPerLoop = 4;  // two instances
  const auto c = collectiveOf(plan);
  ASSERT_TRUE(c->hasPostcondition());
  EXPECT_EQ(c->expectedOutput(1, 3), ChunkValue::of({0, 3}));
  plan.chunksPerLoop = 3;  // not a refinement: no definition
  EXPECT_FALSE(collectiveOf(plan)->hasPostcondition());
}

TEST(CallerLocation, NamesTheBindingsCallerInErrorsAndOps) {
  lang::Program program("p", lang::allGather(2, 1, false));
  program.setCallerLocation("user.py:7");
  program.chunk(0, lang::Buffer::input, 0).copy(0, lang::Buffer::output, 0);
  EXPECT_EQ(program.dag().whereOf(program.dag().ops.back()), "user.py:7");
  program.setCallerLocation("user.py:9");
  try {
    program.chunk(0, lang::Buffer::input, 5);
    FAIL() << "expected ProgramError";
  } catch (const ProgramError& e) {
    EXPECT_THAT(e.what(), ::testing::StartsWith("user.py:9: chunk(): rank 0 input[5]"));
  }
  program.setCallerLocation({});
  try {
    program.chunk(0, lang::Buffer::input, 5);
    FAIL() << "expected ProgramError";
  } catch (const ProgramError& e) {
    EXPECT_THAT(e.what(), HasSubstr("table_collective_test.cpp:"));
  }
}

}  // namespace
}  // namespace chorus::ir
