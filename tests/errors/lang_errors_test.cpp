// Trace-time DSL errors: each names the problem, the chunk and the user's source location.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "chorus/lang.h"
#include "support/error.h"

namespace chorus {
namespace {

using lang::Buffer;
using ::testing::AllOf;
using ::testing::HasSubstr;

// Runs `body`, expects a ProgramError, and returns its message.
template <typename Fn>
std::string programError(Fn&& body) {
  try {
    body();
  } catch (const ProgramError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a ProgramError";
  return "";
}

TEST(LangErrors, UninitializedChunkNamesRankBufferAndLocation) {
  lang::Program p("t", lang::allReduce(2, 2, false));
  const std::string msg = programError([&] { p.chunk(1, Buffer::output, 1); });
  EXPECT_THAT(msg, AllOf(HasSubstr("rank 1 output[1] is uninitialized"),
                         HasSubstr("lang_errors_test.cpp:")));
}

TEST(LangErrors, UninitializedScratchInMultiCountReference) {
  lang::Program p("t", lang::allReduce(2, 2, false));
  p.chunk(0, Buffer::input, 0).copy(0, Buffer::scratch, 0);
  const std::string msg = programError([&] { p.chunk(0, Buffer::scratch, 0, 2); });
  EXPECT_THAT(msg, HasSubstr("rank 0 scratch[1] is uninitialized"));
}

TEST(LangErrors, StaleReferenceNamesTheOverwritingOperation) {
  lang::Program p("t", lang::allReduce(2, 1, false));
  auto old = p.chunk(1, Buffer::input, 0);
  p.chunk(0, Buffer::input, 0).copy(1, Buffer::input, 0);  // overwrites rank 1 input[0]
  const std::string msg = programError([&] { old.copy(0, Buffer::output, 0); });
  EXPECT_THAT(msg, AllOf(HasSubstr("stale reference to rank 1 input[0]"),
                         HasSubstr("lang_errors_test.cpp:"), HasSubstr("use the reference")));
}

TEST(LangErrors, StaleReferenceAfterReduce) {
  lang::Program p("t", lang::allReduce(2, 1, true));
  auto mine = p.chunk(0, Buffer::input, 0);
  mine.reduce(p.chunk(1, Buffer::input, 0));
  const std::string msg = programError([&] { mine.copy(1, Buffer::input, 0); });
  EXPECT_THAT(msg, HasSubstr("stale reference to rank 0 input[0]"));
}

TEST(LangErrors, IndexOutOfRangeNamesBufferSize) {
  lang::Program p("t", lang::allGather(4, 1, false));
  const std::string msg = programError([&] { p.chunk(2, Buffer::input, 1); });
  EXPECT_THAT(msg, AllOf(HasSubstr("rank 2 input[1] is out of range"), HasSubstr("has 1 chunks")));
}

TEST(LangErrors, CopyDestinationOutOfRange) {
  lang::Program p("t", lang::allGather(4, 1, false));
  const std::string msg2 =
      programError([&] { p.chunk(0, Buffer::input, 0).copy(1, Buffer::output, 4); });
  EXPECT_THAT(msg2, HasSubstr("rank 1 output[4] is out of range"));
}

TEST(LangErrors, RankOutOfRange) {
  lang::Program p("t", lang::allReduce(3, 1, false));
  const std::string msg =
      programError([&] { p.chunk(0, Buffer::input, 0).copy(3, Buffer::output, 0); });
  EXPECT_THAT(msg, HasSubstr("rank 3 is out of range; 't' has ranks 0..2"));
}

TEST(LangErrors, CountOutOfRange) {
  lang::Program p("t", lang::allReduce(2, 4, false));
  const std::string msg = programError([&] { p.chunk(0, Buffer::input, 2, 3); });
  EXPECT_THAT(msg, HasSubstr("rank 0 input[4] is out of range"));
  EXPECT_THAT(programError([&] { p.chunk(0, Buffer::input, 0, 0); }),
              HasSubstr("count must be at least 1"));
}

TEST(LangErrors, ReduceOfDifferentCounts) {
  lang::Program p("t", lang::allReduce(2, 4, false));
  const std::string msg = programError(
      [&] { p.chunk(0, Buffer::input, 0, 2).reduce(p.chunk(1, Buffer::input, 0, 3)); });
  EXPECT_THAT(msg, AllOf(HasSubstr("counts differ"), HasSubstr("rank 0 input[0..1] has 2 chunks"),
                         HasSubstr("rank 1 input[0..2] has 3")));
}

TEST(LangErrors, BadParallelizeFactorAndHints) {
  lang::Program p("t", lang::allReduce(2, 1, false));
  EXPECT_THAT(programError([&] { auto s = p.parallelize(0); }), HasSubstr("at least 1"));
  EXPECT_THAT(programError([&] {
                p.chunk(0, Buffer::input, 0).copy(1, Buffer::output, 0, {.channel = -3});
              }),
              HasSubstr("channel and threadblock hints must be >= 0"));
}

TEST(LangErrors, SliceOutOfRange) {
  lang::Program p("t", lang::allReduce(2, 4, false));
  EXPECT_THAT(programError([&] { p.chunk(0, Buffer::input, 0, 2).slice(1, 2); }),
              HasSubstr("slice(1, 2) is out of range for rank 0 input[0..1]"));
}

TEST(LangErrors, FailedOperationLeavesStateUnchanged) {
  lang::Program p("t", lang::allReduce(2, 1, false));
  auto c = p.chunk(0, Buffer::input, 0);
  EXPECT_THROW(c.copy(1, Buffer::output, 5), ProgramError);
  EXPECT_TRUE(p.dag().ops.empty());
  EXPECT_FALSE(p.initialized(1, Buffer::output, 0));
}

TEST(LangErrors, PostconditionViolationNamesRankAndChunk) {
  lang::Program p("t", lang::allReduce(2, 1, false));
  p.chunk(0, Buffer::input, 0).copy(0, Buffer::output, 0);
  p.chunk(1, Buffer::input, 0).reduce(p.chunk(0, Buffer::input, 0)).copy(1, Buffer::output, 0);
  const auto v = p.checkPostcondition();
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].rank, 0);
  EXPECT_THAT(v[0].describe(), AllOf(HasSubstr("rank 0 output[0] holds in(0,0)"),
                                     HasSubstr("requires sum{in(0,0) in(1,0)}")));
}

// takeDag() hands the ops to the compiler; the Program still answers postcondition checks but
// refuses further tracing instead of corrupting the ids its slots refer to.
TEST(LangErrors, TracingAfterTakeDagIsRefused) {
  lang::Program p("t", lang::allReduce(2, 1, false));
  p.chunk(0, Buffer::input, 0).copy(0, Buffer::output, 0);
  const ir::Dag dag = p.takeDag();
  EXPECT_EQ(dag.ops.size(), 1u);
  EXPECT_TRUE(p.dag().ops.empty());
  EXPECT_EQ(p.checkPostcondition().size(), 2u);  // rank 0's sum lacks in(1,0); rank 1 unset
  EXPECT_THAT(programError([&] { p.chunk(1, Buffer::input, 0).copy(1, Buffer::output, 0); }),
              AllOf(HasSubstr("copy(): the program's ops were taken (takeDag())"),
                    HasSubstr("lang_errors_test.cpp:")));
}

// Ops traced from one source line share one stored location.
TEST(LangErrors, OpsFromOneLineShareTheirLocation) {
  lang::Program p("t", lang::allGather(4, 1, false));
  for (int r = 0; r < 4; ++r)
    p.chunk(r, Buffer::input, 0).copy((r + 1) % 4, Buffer::output, r);
  p.chunk(0, Buffer::input, 0).copy(0, Buffer::output, 0);
  const ir::Dag& dag = p.dag();
  ASSERT_EQ(dag.ops.size(), 5u);
  EXPECT_EQ(dag.locations.size(), 2u);
  EXPECT_EQ(dag.ops[0].where, dag.ops[3].where);
  EXPECT_NE(dag.ops[0].where, dag.ops[4].where);
  EXPECT_THAT(dag.whereOf(dag.ops[4]), HasSubstr("lang_errors_test.cpp:"));
}

TEST(LangErrors, CollectiveOptionErrors) {
  EXPECT_THROW(lang::allReduce(0, 1, false), OptionError);
  EXPECT_THROW(lang::broadcast(4, 1, 4, false), OptionError);
  EXPECT_THROW(lang::Program("t", nullptr), OptionError);
  EXPECT_THROW(lang::Program("t", lang::allReduce(2, 1, false), {.instances = 0}), OptionError);
}

}  // namespace
}  // namespace chorus
