// The group reduction (ir/group_reduction.h): its postcondition, its self-describing name, and
// collectiveOf finding it again from an IR's customName.
#include "ir/group_reduction.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "chorus/error.h"

namespace chorus::ir {
namespace {

using ::testing::HasSubstr;

TEST(GroupReduction, EachRankEndsWithItsGroupsSum) {
  const auto c = makeGroupReduction(4, 2, {{0, 2}, {1, 3}});
  EXPECT_EQ(c->kind(), CollectiveKind::custom);
  EXPECT_EQ(c->name(), "group-reduction:0,2;1,3");
  EXPECT_TRUE(c->inPlace());
  EXPECT_TRUE(c->hasPostcondition());
  EXPECT_EQ(c->inputChunks(3), 2);
  EXPECT_EQ(c->expectedOutput(2, 1), ChunkValue::sum({{0, 1}, {2, 1}}));
  EXPECT_EQ(c->expectedOutput(1, 0), ChunkValue::sum({{1, 0}, {3, 0}}));
  const auto refined = c->refined(3);
  EXPECT_EQ(refined->chunkFactor(), 6);
  EXPECT_EQ(refined->name(), c->name());
  EXPECT_EQ(refined->expectedOutput(3, 5), ChunkValue::sum({{1, 5}, {3, 5}}));
}

TEST(GroupReduction, GroupsMustPartitionTheRanks) {
  EXPECT_THROW(makeGroupReduction(4, 1, {{0, 1}, {1, 2, 3}}), OptionError);  // 1 twice
  EXPECT_THROW(makeGroupReduction(4, 1, {{0, 1}, {2}}), OptionError);        // 3 missing
  EXPECT_THROW(makeGroupReduction(4, 1, {{0, 1, 2, 3, 4}}), OptionError);    // 4 is no rank
  EXPECT_THROW(makeGroupReduction(4, 1, {{0, 1, 2, 3}, {}}), OptionError);   // empty group
  EXPECT_THROW(makeGroupReduction(4, 0, {{0, 1, 2, 3}}), OptionError);
}

TEST(GroupReduction, NameRoundTrips) {
  CollectiveOptions options;
  options.nranks = 6;
  options.chunkFactor = 3;
  const auto c = groupReductionNamed("group-reduction:0,1,2;5,4,3", options);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->name(), "group-reduction:0,1,2;5,4,3");
  EXPECT_EQ(c->chunkFactor(), 3);
  EXPECT_EQ(c->expectedOutput(4, 2), ChunkValue::sum({{3, 2}, {4, 2}, {5, 2}}));
  EXPECT_EQ(groupReductionNamed("alltonext", options), nullptr);
}

TEST(GroupReduction, MalformedNamesAreParseErrors) {
  CollectiveOptions options;
  options.nranks = 4;
  for (const char* name : {"group-reduction:", "group-reduction:0,1;", "group-reduction:0,,1",
                           "group-reduction:0,1|2,3", "group-reduction:a"}) {
    SCOPED_TRACE(name);
    EXPECT_THROW(groupReductionNamed(name, options), ParseError);
  }
  try {
    groupReductionNamed("group-reduction:0,1;2", options);
    FAIL() << "expected a ParseError";
  } catch (const ParseError& e) {
    EXPECT_THAT(e.what(), HasSubstr("does not fit 4 ranks"));
    EXPECT_THAT(e.what(), HasSubstr("rank 3 is in no group"));
  }
}

TEST(GroupReduction, CollectiveOfFindsItByCustomName) {
  Algorithm a;
  a.name = "p2-m1-0";
  a.collective = CollectiveKind::custom;
  a.customName = "group-reduction:0,1;2,3";
  a.nranks = 4;
  a.inPlace = true;
  a.chunksPerLoop = 4;
  const auto c = collectiveOf(a);
  EXPECT_EQ(c->name(), a.customName);
  EXPECT_EQ(c->chunkFactor(), 4);
  EXPECT_TRUE(c->hasPostcondition());
}

}  // namespace
}  // namespace chorus::ir
