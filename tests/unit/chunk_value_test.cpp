// ir::ChunkValue as a shared reduction DAG: equality is multiset equality however the value
// was built, duplicates count, deep chains neither recurse nor lose parts, and ValueMatcher's
// memo never turns a wrong value right. Also the built-in collectives' shared expected sums.
#include <gtest/gtest.h>

#include <vector>

#include "ir/collective.h"

namespace chorus::ir {
namespace {

ChunkValue in(int rank, int index) {
  return ChunkValue::of({rank, index});
}

TEST(ChunkValue, ReductionsInAnyOrderEqualTheFlatSum) {
  const ChunkValue left = ChunkValue::reduce(ChunkValue::reduce(in(0, 1), in(1, 1)), in(2, 1));
  const ChunkValue right = ChunkValue::reduce(in(2, 1), ChunkValue::reduce(in(1, 1), in(0, 1)));
  const ChunkValue flat = ChunkValue::sum({{2, 1}, {0, 1}, {1, 1}});
  EXPECT_EQ(left, right);
  EXPECT_EQ(left, flat);
  EXPECT_EQ(flat, left);
  EXPECT_FALSE(left.sharesStorageWith(right));
  EXPECT_EQ(left.size(), 3u);
  EXPECT_EQ(left.describe(), "sum{in(0,1) in(1,1) in(2,1)}");
  EXPECT_EQ(left.parts(), flat.parts());
}

TEST(ChunkValue, DuplicatesAndMissingPartsDiffer) {
  const ChunkValue a = in(0, 0);
  const ChunkValue b = in(1, 0);
  const ChunkValue ab = ChunkValue::reduce(a, b);
  const ChunkValue aa = ChunkValue::reduce(a, a);  // a double-counted chunk
  EXPECT_NE(aa, ab);                               // same size, other parts
  EXPECT_EQ(aa, ChunkValue::sum({{0, 0}, {0, 0}}));
  EXPECT_EQ(aa.parts(), (std::vector<InputChunk>{{0, 0}, {0, 0}}));
  EXPECT_NE(ChunkValue::reduce(ab, a), ab);          // one part too many
  EXPECT_NE(ab, a);                                  // one part missing
  EXPECT_NE(ab, ChunkValue::sum({{0, 0}, {1, 1}}));  // another index
  EXPECT_NE(ab, ChunkValue());
  EXPECT_EQ(ChunkValue(), ChunkValue());
  EXPECT_FALSE(ChunkValue().initialized());
  EXPECT_EQ(ChunkValue().describe(), "uninitialized");
}

TEST(ChunkValue, SharedOperandsCountOncePerUse) {
  // Recursive doubling: each round reduces two values built from shared ones.
  const ChunkValue x = ChunkValue::reduce(in(0, 0), in(1, 0));
  const ChunkValue y = ChunkValue::reduce(in(2, 0), in(3, 0));
  const ChunkValue xy = ChunkValue::reduce(x, y);
  const ChunkValue twice = ChunkValue::reduce(xy, x);  // x's parts twice
  EXPECT_EQ(xy, ChunkValue::sum({{0, 0}, {1, 0}, {2, 0}, {3, 0}}));
  EXPECT_EQ(twice, ChunkValue::sum({{0, 0}, {0, 0}, {1, 0}, {1, 0}, {2, 0}, {3, 0}}));
}

TEST(ChunkValue, DeepChainsFlattenAndReleaseWithoutRecursion) {
  // One reduction per hop of a very long chain: flattening and destruction must not recurse
  // once per link (a million frames would overflow the stack).
  constexpr int kLinks = 1'000'000;
  ChunkValue chain = in(0, 0);
  for (int i = 1; i < kLinks; ++i)
    chain = ChunkValue::reduce(chain, in(i % 1000, 0));
  EXPECT_EQ(chain.size(), static_cast<std::uint64_t>(kLinks));
  const std::vector<InputChunk> parts = chain.parts();
  ASSERT_EQ(parts.size(), static_cast<std::size_t>(kLinks));
  EXPECT_EQ(parts.front(), (InputChunk{0, 0}));
  EXPECT_EQ(parts.back(), (InputChunk{999, 0}));
  chain = ChunkValue();  // releases the chain
  EXPECT_FALSE(chain.initialized());
}

TEST(ValueMatcher, RemembersButNeverTurnsAWrongValueRight) {
  const ChunkValue expected = ChunkValue::sum({{0, 0}, {1, 0}, {2, 0}});
  const ChunkValue right = ChunkValue::reduce(ChunkValue::reduce(in(0, 0), in(1, 0)), in(2, 0));
  const ChunkValue wrong = ChunkValue::reduce(ChunkValue::reduce(in(0, 0), in(1, 0)), in(1, 0));
  const ChunkValue otherExpected = ChunkValue::sum({{0, 0}, {1, 0}, {1, 0}});
  ValueMatcher matcher;
  for (int round = 0; round < 3; ++round) {
    const ChunkValue rightCopy = right;  // what many ranks hold: shared storage
    const ChunkValue wrongCopy = wrong;
    EXPECT_TRUE(matcher.equal(rightCopy, expected));
    EXPECT_FALSE(matcher.equal(wrongCopy, expected));
    // The same actual storage against another expected value is compared afresh.
    EXPECT_FALSE(matcher.equal(rightCopy, otherExpected));
    EXPECT_TRUE(matcher.equal(wrongCopy, otherExpected));
    EXPECT_FALSE(matcher.equal(ChunkValue(), expected));
    EXPECT_TRUE(matcher.equal(expected, expected));
  }
}

TEST(ChunkValue, ReducingCollectivesShareOneExpectedSumPerIndex) {
  const auto allreduce = makeCollective(CollectiveKind::allreduce, {4, 3, true, 0});
  const auto expected = allreduce->expectedOutput(0, 2);
  ASSERT_TRUE(expected);
  EXPECT_EQ(*expected, ChunkValue::sum({{0, 2}, {1, 2}, {2, 2}, {3, 2}}));
  for (int rank = 1; rank < 4; ++rank)
    EXPECT_TRUE(allreduce->expectedOutput(rank, 2)->sharesStorageWith(*expected)) << rank;
  EXPECT_NE(*allreduce->expectedOutput(0, 1), *expected);
  const auto reducescatter = makeCollective(CollectiveKind::reducescatter, {4, 2, false, 0});
  EXPECT_EQ(*reducescatter->expectedOutput(3, 1),
            ChunkValue::sum({{0, 7}, {1, 7}, {2, 7}, {3, 7}}));
  const auto reduce = makeCollective(CollectiveKind::reduce, {3, 1, false, 1});
  EXPECT_FALSE(reduce->expectedOutput(0, 0));
  EXPECT_EQ(*reduce->expectedOutput(1, 0), ChunkValue::sum({{0, 0}, {1, 0}, {2, 0}}));
}

}  // namespace
}  // namespace chorus::ir
