// The head's /metrics on a live cluster: Prometheus' own linter accepts it, and the figures
// follow what the cluster did.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "cluster_fixture.h"

namespace corral::testing {
namespace {

std::string Metrics(const LocalCluster& c) {
  return RunCommand({"/usr/bin/curl", "-sf", c.addr() + "/metrics"}).out;
}

TEST(Observability, HeadMetricsPassPromtoolAndCountWhatHappened) {
  if (access("/usr/bin/promtool", X_OK) != 0) {
    GTEST_SKIP()
        << "promtool not installed (Debian package prometheus; scripts/setup.sh installs it)";
  }
  LocalCluster c("metrics", 1, 2);
  std::string id = c.Submit({"--gpus", "1", "--", "true"});
  ASSERT_EQ(c.Corral({"wait", id, "--timeout", "30s"}).exit_code, 0);
  c.Corral({"jobs"});
  std::string text = Metrics(c);
  ASSERT_FALSE(text.empty());
  std::string file = c.dir() + "/metrics.txt";
  std::ofstream(file) << text;
  auto lint = RunCommand({"/bin/sh", "-c", "/usr/bin/promtool check metrics < " + file});
  EXPECT_EQ(lint.exit_code, 0) << lint.out << lint.err << "\n" << text;
  for (const char* want :
       {"corral_jobs{state=\"succeeded\"} 1", "corral_jobs_submitted_total 1",
        "corral_jobs_finished_total{state=\"succeeded\"} 1",
        "corral_job_wait_seconds_count{queue=\"default\"} 1", "corral_nodes{state=\"ready\"} 1",
        "corral_gpus{state=\"idle\"} 2", "corral_build_info{version=",
        "corral_api_request_duration_seconds_bucket{route=\"POST /v1/jobs\",code=\"201\",le=",
        "corral_store_commit_duration_seconds_count",
        "corral_schedule_pass_duration_seconds_count"}) {
    EXPECT_NE(text.find(want), std::string::npos) << want << "\n" << text;
  }
  EXPECT_EQ(text.find("job=\""), std::string::npos) << "no job-id labels";
}

}  // namespace
}  // namespace corral::testing
