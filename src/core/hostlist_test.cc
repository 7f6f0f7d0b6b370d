#include "core/hostlist.h"

#include <gtest/gtest.h>

namespace corral {
namespace {

// The examples of Slurm's documentation (sbatch, scontrol show hostnames, SLURM_JOB_NODELIST).
TEST(Hostlist, CompressesAsSlurmDoes) {
  struct Case {
    std::vector<std::string> hosts;
    std::string want;
  };
  for (const Case& c : std::vector<Case>{
           {{"node01", "node02", "node03", "node07"}, "node[01-03,07]"},
           {{"tux1", "tux2", "tux3"}, "tux[1-3]"},
           {{"linux"}, "linux"},
           {{"lx10", "lx11", "lx12", "lx13", "lx14", "lx15", "lx16", "lx17", "lx18"}, "lx[10-18]"},
           {{"n3", "n1", "n2", "n1"}, "n[1-3]"},
           {{"gpu9", "gpu10"}, "gpu[9-10]"},
           {{"a1", "b2", "a2"}, "a[1-2],b2"},
           {{"node001", "node1"}, "node001,node1"},  // widths differ: two groups
           {{"head", "node01"}, "head,node01"},
       }) {
    EXPECT_EQ(CompressHostlist(c.hosts), c.want);
  }
}

TEST(Hostlist, ExpandsAndRoundTrips) {
  auto e = ExpandHostlist("node[01-03,07],tux5,rack[1-2]-ib");
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(*e, (std::vector<std::string>{"node01", "node02", "node03", "node07", "tux5",
                                          "rack1-ib", "rack2-ib"}));
  for (const char* expr : {"node[01-03,07]", "lx[10-18]", "a[1-2],b2", "linux"}) {
    auto hosts = ExpandHostlist(expr);
    ASSERT_TRUE(hosts.ok());
    EXPECT_EQ(CompressHostlist(*hosts), expr);
  }
  for (const char* bad : {"node[1-", "node]", "node[3-1]", "node[a-b]", "a,,b", "n[1-2][3]"}) {
    auto r = ExpandHostlist(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_NE(r.status().message().find("hostlist"), std::string::npos);
    }
  }
}

}  // namespace
}  // namespace corral
