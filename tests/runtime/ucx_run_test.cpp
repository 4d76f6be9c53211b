// Every library algorithm on forked rank processes over the ucx transport (runOnProcesses with
// transport "ucx", what `chorus run --transport ucx` does), with UCX's tcp transport and with
// its shared-memory ones (UCX_TLS, inherited by the ranks), every output element checked.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <string>
#include <tuple>
#include <vector>

#include "algorithms/registry.h"
#include "compile_for_test.h"
#include "runtime/process_runner.h"

namespace chorus::ucx_run_test {

using runtime::DataType;
using runtime::ReduceOp;
using namespace std::chrono_literals;

class LibraryOnUcx : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

TEST_P(LibraryOnUcx, ExactResults) {
  const auto& [name, tls] = GetParam();
  const std::string saved = ::getenv("UCX_TLS") ? ::getenv("UCX_TLS") : "";
  ::setenv("UCX_TLS", tls.c_str(), 1);  // the forked ranks inherit it
  const ir::Algorithm a = testing_support::compileAtTestShape(algorithms::findAlgorithm(name));
  // A count the chunking does not divide, and 300 KiB per block: many tiles through 16 KiB
  // slots, credits flowing back all the time.
  for (const std::size_t count : {std::size_t{777}, std::size_t{(300 << 10) / 4}}) {
    runtime::ProcessRunOptions options;
    options.transport = "ucx";
    options.count = count;
    options.type = count == 777 ? DataType::int32 : DataType::float32;
    options.op = count == 777 ? ReduceOp::max : ReduceOp::sum;
    options.timeout = 60s;
    options.fifo.slotBytes = 16 << 10;
    const runtime::RunReport report = runtime::runOnProcesses(a, options);
    EXPECT_TRUE(report.ok()) << name << " UCX_TLS=" << tls << " count " << count << ": "
                             << report.firstWrong;
    EXPECT_GT(report.checkedElements, 0u);
  }
  if (saved.empty())
    ::unsetenv("UCX_TLS");
  else
    ::setenv("UCX_TLS", saved.c_str(), 1);
}

INSTANTIATE_TEST_SUITE_P(
    Registry, LibraryOnUcx,
    ::testing::Combine(::testing::ValuesIn(testing_support::libraryAlgorithmNames()),
                       ::testing::Values(std::string("tcp"), std::string("sm,self"))),
    [](const ::testing::TestParamInfo<std::tuple<std::string, std::string>>& info) {
      std::string name = std::get<0>(info.param) +
                         (std::get<1>(info.param) == "tcp" ? "_UcxTcp" : "_UcxSharedMemory");
      for (auto& ch : name)
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
      return name;
    });

}  // namespace chorus::ucx_run_test
