// Communicators with shallow FIFOs (CommConfig.slots / CHORUS_SLOTS below the default 8): the
// library's plans are scheduled for the configured depth and run exactly, and a plan file that
// can deadlock at that depth is refused when the communicator is created, naming the file, the
// depth and the smallest depth that works (docs/compiler.md "Deadlock freedom at the runtime's
// FIFO depth").
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "algorithms/registry.h"
#include "api_test_util.h"
#include "chorus/chorus.h"
#include "ir/formats.h"
#include "verify/fifo_depth.h"

namespace chorus::apitest {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

constexpr int kRanks = 8;

CommConfig shallowConfig(int slots) {
  CommConfig config = testConfig();
  config.slots = slots;
  config.slotBytes = 4096;  // many tiles per call, so the FIFOs fill up
  config.tuningFile = "off";
  return config;
}

// Every rank allreduces `count` int32 elements with `comms`; checks each output element.
void expectExactAllReduce(std::vector<Communicator>& comms, std::size_t count) {
  const int n = static_cast<int>(comms.size());
  std::vector<Buffer> in, out;
  for (int r = 0; r < n; ++r) {
    in.emplace_back(DataType::int32, count);
    out.emplace_back(DataType::int32, count);
    for (std::size_t i = 0; i < count; ++i)
      in.back().set(i, inputValue(ReduceOp::sum, DataType::int32, r, i));
  }
  onThreads(n, [&](int r) {
    comms[static_cast<std::size_t>(r)].allReduce(in[static_cast<std::size_t>(r)].data(),
                                                 out[static_cast<std::size_t>(r)].data(), count,
                                                 DataType::int32, ReduceOp::sum);
  });
  for (int r = 0; r < n; ++r) {
    for (std::size_t i = 0; i < count; ++i) {
      std::vector<long> values;
      for (int q = 0; q < n; ++q)
        values.push_back(inputValue(ReduceOp::sum, DataType::int32, q, i));
      ASSERT_TRUE(out[static_cast<std::size_t>(r)].holds(i, reduceValues(ReduceOp::sum, values)))
          << "rank " << r << " element " << i;
    }
  }
}

TEST(FifoDepthTest, LibraryPlansRunExactlyWithOneSlot) {
  std::vector<Communicator> comms = Communicator::initAll(kRanks, shallowConfig(1));
  // 1 MiB: the built-in default is allreduce.ring, whose 8-slot schedule deadlocks at 1 slot.
  expectExactAllReduce(comms, std::size_t{256} << 10);
  EXPECT_EQ(comms[0].lastPlan().algorithm, "allreduce.ring");
}

class PlanDir {
 public:
  PlanDir() : path_(fs::temp_directory_path() / fmt::format("chorus-fifo-depth-{}", ::getpid())) {
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~PlanDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  std::string path() const { return path_.string(); }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(path_ / name) << text;
    return (path_ / name).string();
  }

 private:
  fs::path path_;
};

TEST(FifoDepthTest, PlanFileThatDeadlocksAtTheConfiguredDepthIsRefusedNamingTheDepthItNeeds) {
  algorithms::BuildRequest build;
  build.algorithm = "allreduce.ring";
  build.ranks = kRanks;
  const ir::Algorithm ring = algorithms::compileAlgorithm(build).algorithm;  // for 8 slots
  const std::optional<int> needed = verify::minimumFifoSlots(ring);
  ASSERT_TRUE(needed.has_value());
  ASSERT_GT(*needed, 1) << "the test needs a plan that deadlocks with 1 slot";
  PlanDir dir;
  const std::string file = dir.write("ring8.xml", ir::writeAlgorithm(ring, ir::Format::xml));

  CommConfig config = shallowConfig(*needed - 1);
  config.algoDir = dir.path();
  const std::string message =
      messageOf<OptionError>([&] { Communicator::initAll(kRanks, config); });
  EXPECT_THAT(message, HasSubstr(file));
  EXPECT_THAT(message, HasSubstr(fmt::format("can deadlock with {} FIFO slot(s)", *needed - 1)));
  EXPECT_THAT(message, HasSubstr(fmt::format("smallest depth that works for it is {}", *needed)));
  EXPECT_THAT(message, HasSubstr(fmt::format("CHORUS_SLOTS={}", *needed)));
  EXPECT_THAT(message, HasSubstr("deadlock: "));

  // At the depth it needs, the file is accepted and runs exactly.
  config.slots = *needed;
  std::vector<Communicator> comms = Communicator::initAll(kRanks, config);
  expectExactAllReduce(comms, std::size_t{64} << 10);
  EXPECT_THAT(comms[0].lastPlan().source, HasSubstr("CHORUS_ALGO_DIR"));
}

}  // namespace
}  // namespace chorus::apitest
