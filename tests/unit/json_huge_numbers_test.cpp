// Every JSON reader turns a number beyond double's range (nlohmann's out_of_range, not a
// parse_error; found by fuzz_plan_reader) into a ParseError naming the source, never an
// escaping library exception.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "chorus/error.h"
#include "ir/json_format.h"
#include "perf/record_json.h"
#include "selection/tuning_table.h"
#include "synth/link_matrix.h"
#include "topology/topology_json.h"

namespace chorus {
namespace {

using ::testing::HasSubstr;

constexpr const char* kHuge = "[10E00000000008773851]";

template <typename F>
void expectParseError(F read, const char* source) {
  try {
    read();
    FAIL() << "expected a ParseError";
  } catch (const ParseError& e) {
    EXPECT_THAT(e.what(), HasSubstr(source));
  }
}

TEST(JsonHugeNumbers, EveryReaderReportsAParseError) {
  expectParseError([] { ir::readJson(kHuge, "plan.json"); }, "plan.json");
  expectParseError([] { topology::parseTopologyJson(kHuge, "topo.json"); }, "topo.json");
  expectParseError([] { selection::parseTuningFile(kHuge, "tune.json"); }, "tune.json");
  expectParseError([] { synth::parseLinkMatrix(kHuge, "matrix.json"); }, "matrix.json");
  expectParseError([] { perf::recordsFromJson(kHuge, "bench.json"); }, "bench.json");
}

}  // namespace
}  // namespace chorus
