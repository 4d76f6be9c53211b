// Interface selection of the TCP transport (transport/tcp/net_interfaces.h): NCCL-style
// CHORUS_SOCKET_IFNAME filters and the documented default.
#include "transport/tcp/net_interfaces.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "chorus/error.h"

namespace chorus::transport {
namespace {

using ::testing::HasSubstr;

const std::vector<NetInterface> kHost = {{"lo", "127.0.0.1", false, true},
                                         {"docker0", "172.17.0.1", false, false},
                                         {"eth0", "fd00::5", true, false},
                                         {"eth0", "10.0.0.5", false, false},
                                         {"ib0", "10.1.0.5", false, false}};

TEST(NetInterfaces, FilterSyntax) {
  EXPECT_TRUE(matchesFilter(parseIfnameFilter("eth,ib"), "eth1"));
  EXPECT_FALSE(matchesFilter(parseIfnameFilter("eth,ib"), "lo"));
  EXPECT_TRUE(matchesFilter(parseIfnameFilter("^docker,lo"), "eth0"));
  EXPECT_FALSE(matchesFilter(parseIfnameFilter("^docker,lo"), "docker0"));
  EXPECT_TRUE(matchesFilter(parseIfnameFilter("=eth0"), "eth0"));
  EXPECT_FALSE(matchesFilter(parseIfnameFilter("=eth0"), "eth01"));
  EXPECT_FALSE(matchesFilter(parseIfnameFilter("^=eth0"), "eth0"));
}

TEST(NetInterfaces, DefaultSkipsLoopbackAndDockerAndPrefersIpv4) {
  const NetInterface chosen = chooseInterface(kHost, "", /*peersOnOtherHosts=*/true);
  EXPECT_EQ(chosen.name, "eth0");
  EXPECT_EQ(chosen.address, "10.0.0.5");
}

TEST(NetInterfaces, EveryRankOnThisHostUsesLoopback) {
  EXPECT_EQ(chooseInterface(kHost, "", false).name, "lo");
}

TEST(NetInterfaces, TheVariableChooses) {
  EXPECT_EQ(chooseInterface(kHost, "ib", true).address, "10.1.0.5");
  EXPECT_EQ(chooseInterface(kHost, "^lo,docker,eth", true).name, "ib0");
  EXPECT_EQ(chooseInterface(kHost, "docker", true).name, "docker0");
}

TEST(NetInterfaces, NoMatchListsEveryCandidateTried) {
  try {
    chooseInterface(kHost, "enp", true);
    FAIL() << "expected a CommError";
  } catch (const CommError& e) {
    EXPECT_THAT(e.what(), HasSubstr("CHORUS_SOCKET_IFNAME=enp"));
    EXPECT_THAT(e.what(), HasSubstr("eth0 10.0.0.5"));
    EXPECT_THAT(e.what(), HasSubstr("ib0 10.1.0.5"));
  }
  EXPECT_THROW(chooseInterface({{"lo", "127.0.0.1", false, true}}, "", true), CommError);
}

TEST(NetInterfaces, ThisHostHasLoopback) {
  bool loopback = false;
  for (const NetInterface& i : listInterfaces())
    loopback = loopback || i.loopback;
  EXPECT_TRUE(loopback);
}

}  // namespace
}  // namespace chorus::transport
