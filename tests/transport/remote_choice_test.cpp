// How the auto transport reaches other hosts (transport/remote_choice.h): CHORUS_REMOTE_TRANSPORT
// values, every rank's wish in the store and one decision from all of them; which UCX
// transports UCX_TLS allows and which of this host's UCX devices count as RDMA
// (transport/ucx/ucx_devices.h).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "chorus/error.h"
#include "transport/remote_choice.h"
#include "transport/ucx/ucx_devices.h"

namespace chorus::transport::remote_choice_test {

using ::testing::HasSubstr;

RemoteWish automaticWith(std::string devices) {
  return {RemoteTransport::automatic, std::move(devices)};
}

TEST(RemoteChoice, ValuesParseAndOthersNameTheVariable) {
  EXPECT_EQ(parseRemoteTransport("auto", "V"), RemoteTransport::automatic);
  EXPECT_EQ(parseRemoteTransport("tcp", "V"), RemoteTransport::tcp);
  EXPECT_EQ(parseRemoteTransport("ucx", "V"), RemoteTransport::ucx);
  try {
    parseRemoteTransport("rdma", "CHORUS_REMOTE_TRANSPORT");
    FAIL() << "rdma is no value";
  } catch (const OptionError& error) {
    EXPECT_THAT(error.what(), HasSubstr("CHORUS_REMOTE_TRANSPORT='rdma'"));
    EXPECT_THAT(error.what(), HasSubstr("choose auto"));
  }
}

TEST(RemoteChoice, WishesSurviveTheStoreAndGarbageIsNamed) {
  const RemoteWish wish =
      decodeRemoteWish(encodeRemoteWish(automaticWith("rc_mlx5/mlx5_0:1,ud_mlx5/mlx5_0:1")), 3);
  EXPECT_EQ(wish.asked, RemoteTransport::automatic);
  EXPECT_EQ(wish.rdmaDevices, "rc_mlx5/mlx5_0:1,ud_mlx5/mlx5_0:1");
  EXPECT_EQ(decodeRemoteWish(encodeRemoteWish({RemoteTransport::tcp, ""}), 0).asked,
            RemoteTransport::tcp);
  EXPECT_THAT([] { decodeRemoteWish("verbs", 5); },
              ::testing::ThrowsMessage<CommError>(HasSubstr("rank 5 published 'verbs'")));
}

TEST(RemoteChoice, AutoTakesUcxOnlyWhereEveryRankHasRdma) {
  const RemoteDecision all =
      decideRemote({automaticWith("rc_mlx5/mlx5_0:1"), automaticWith("rc_verbs/mlx5_1:1")});
  EXPECT_TRUE(all.ucx);
  EXPECT_THAT(all.why, HasSubstr("every rank's UCX finds an RDMA device (rank 0: rc_mlx5"));
  const RemoteDecision some = decideRemote(
      {automaticWith("rc_mlx5/mlx5_0:1"), automaticWith(""), automaticWith("rc_mlx5/mlx5_0:1")});
  EXPECT_FALSE(some.ucx);
  EXPECT_EQ(some.why, "rank 1's UCX finds no RDMA device");
}

TEST(RemoteChoice, AnExplicitChoiceWinsAndDisagreementFailsAlike) {
  EXPECT_TRUE(decideRemote({automaticWith(""), {RemoteTransport::ucx, ""}}).ucx);
  EXPECT_FALSE(decideRemote({{RemoteTransport::tcp, ""}, automaticWith("rc_mlx5/mlx5_0:1")}).ucx);
  EXPECT_THAT(
      [] {
        decideRemote({{RemoteTransport::tcp, ""}, automaticWith(""), {RemoteTransport::ucx, ""}});
      },
      ::testing::ThrowsMessage<OptionError>(
          HasSubstr("rank 0 has CHORUS_REMOTE_TRANSPORT=tcp but rank 2 has ucx")));
}

TEST(UcxDevices, UcxTlsListsExclusionsAndAliases) {
  EXPECT_TRUE(ucxTlsAllows("", "rc_mlx5")) << "unset: everything";
  EXPECT_TRUE(ucxTlsAllows("all", "dc_mlx5"));
  EXPECT_TRUE(ucxTlsAllows("sm,rc", "rc_verbs"));
  EXPECT_TRUE(ucxTlsAllows("rc_x", "rc_mlx5"));
  EXPECT_FALSE(ucxTlsAllows("rc_x", "rc_verbs"));
  EXPECT_TRUE(ucxTlsAllows("ib", "ud_verbs"));
  EXPECT_FALSE(ucxTlsAllows("tcp,sm", "rc_mlx5"));
  EXPECT_TRUE(ucxTlsAllows("tcp,sm", "tcp"));
  EXPECT_FALSE(ucxTlsAllows("^ib", "rc_mlx5"));
  EXPECT_TRUE(ucxTlsAllows("^ib", "tcp"));
  EXPECT_FALSE(ucxTlsAllows("^tcp", "tcp"));
}

TEST(UcxDevices, TcpAndSharedMemoryAreNeverRdma) {
  // Whatever this host has, UCX_TLS=tcp,sm,self leaves no RDMA transport.
  EXPECT_TRUE(ucxRdmaDevices("tcp,sm,self").empty());
  for (const UcxDevice& device : ucxRdmaDevices("")) {
    EXPECT_NE(device.transport, "tcp");
    EXPECT_FALSE(device.device.empty());
  }
}

}  // namespace chorus::transport::remote_choice_test
