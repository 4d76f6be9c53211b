// `--transport` of `chorus run`, `bench` and `tune` comes from the transport registry: every
// --help lists the registered transports these commands run (with their descriptions), and a
// transport they cannot use (auto, or thread under --launched) is a usage error saying why.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "cli_run.h"
#include "transport/registry.h"

namespace chorus {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing_support::CommandResult;
using testing_support::runCli;

TEST(TransportOptionCli, HelpListsTheRegisteredTransportsWithTheirDescriptions) {
  for (const char* command : {"run --help", "bench --help", "tune --help"}) {
    const CommandResult help = runCli(command);
    ASSERT_EQ(help.exitCode, 0) << command << help.output;
    EXPECT_THAT(help.output, HasSubstr("thread, shm, tcp or ucx (")) << command;
    for (const transport::TransportEntry* entry : transport::listTransports()) {
      if (entry->supports.choosesPerPeer) continue;
      EXPECT_THAT(help.output, HasSubstr(entry->name + ": " + entry->description)) << command;
    }
  }
  // bench --launched also takes the transports that choose per peer, auto by default.
  const CommandResult bench = runCli("bench --help");
  EXPECT_THAT(bench.output, HasSubstr("with --launched: shm, tcp, auto or ucx (default auto: " +
                                      transport::requireTransport("auto", "test").description));
  EXPECT_THAT(runCli("run --help").output, Not(HasSubstr("auto:")));
}

TEST(TransportOptionCli, TransportsTheseCommandsCannotUseAreUsageErrors) {
  const CommandResult automatic = runCli("run allreduce.ring --ranks 2 --transport auto");
  EXPECT_EQ(automatic.exitCode, 2) << automatic.output;
  EXPECT_THAT(automatic.output, HasSubstr("--transport auto chooses shm or tcp per peer"));
  EXPECT_THAT(automatic.output, HasSubstr("here use thread, shm, tcp or ucx"));

  const CommandResult tune = runCli("tune --ranks 2 --transport pigeon");
  EXPECT_EQ(tune.exitCode, 2) << tune.output;
  EXPECT_THAT(tune.output, HasSubstr("unknown --transport 'pigeon'; use thread, shm, tcp or ucx"));

  const CommandResult launched = runCli("bench allreduce --launched --transport thread");
  EXPECT_EQ(launched.exitCode, 2) << launched.output;
  EXPECT_THAT(launched.output, HasSubstr("with --launched use shm, tcp, auto or ucx"));

  const CommandResult bind = runCli("bench allreduce --ranks 2 --bind core -b 8 -e 8");
  EXPECT_EQ(bind.exitCode, 2) << bind.output;
  EXPECT_THAT(bind.output, HasSubstr("--bind core pins rank processes; it needs --transport shm, "
                                     "tcp or ucx"));
}

}  // namespace
}  // namespace chorus
