// End-to-end check of quota reclaim: two queues with quota 4 each on 8 GPUs. Queue A fills
// all 8 GPUs with preemptible jobs; queue B submits four 1-GPU jobs. B's jobs start; A's
// victims get SIGTERM (they trap it and keep running) and then SIGKILL after the grace period,
// are requeued as new runs keeping CORRAL_CHECKPOINT_DIR, and later complete.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cluster_fixture.h"

namespace corral::testing {
namespace {

using Json = nlohmann::json;

TEST(Reclaim, QueueUnderQuotaGetsItsGpusBackByPreemption) {
  LocalCluster c("reclaim", 2, 4, {"--min-runtime-before-preempt", "0"});
  for (const char* q : {"a", "b"}) {
    auto r = c.Corral({"queues", "set", q, "--quota", "4"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  const std::string release = c.dir() + "/release";
  // First run: record SIGTERM in the checkpoint dir, ignore it, wait to be released (or
  // killed). A later run finds the checkpoint and finishes at once.
  const std::string a_script =
      "mkdir -p $CORRAL_CHECKPOINT_DIR; "
      "if [ -f $CORRAL_CHECKPOINT_DIR/term ]; then echo resumed run $CORRAL_RUN; exit 0; fi; "
      "trap 'echo TERM $(date +%s%N) >> $CORRAL_CHECKPOINT_DIR/term' TERM; "
      "while [ ! -f " +
      release + " ]; do sleep 0.1; done; echo released";
  std::vector<std::string> a_jobs, b_jobs;
  for (int i = 0; i < 8; ++i) {
    a_jobs.push_back(c.Submit({"--queue", "a", "--gpus", "1", "--preemptible", "--grace-period",
                               "1s", "--", "/bin/sh", "-c", a_script}));
  }
  ASSERT_TRUE(WaitUntil(30000, [&] {
    auto r = c.Corral({"jobs", "--state", "running", "-o", "json"});
    return Json::parse(r.out, nullptr, false).size() == 8;
  })) << "queue a did not fill the cluster";

  // B's jobs hold their GPUs until all four run at once: a B job that ended early would hand
  // its GPU to the next B job, and fewer of A's would need preempting (seen under ASan, where
  // each submission is slow).
  const std::string release_b = c.dir() + "/release-b";
  for (int i = 0; i < 4; ++i) {
    b_jobs.push_back(c.Submit({"--queue", "b", "--gpus", "1", "--", "/bin/sh", "-c",
                               "while [ ! -f " + release_b + " ]; do sleep 0.1; done; echo b done"}));
  }
  ASSERT_TRUE(WaitUntil(60000, [&] {
    auto r = c.Corral({"jobs", "--queue", "b", "--state", "running", "-o", "json"});
    return Json::parse(r.out, nullptr, false).size() == 4;
  })) << "queue b's four jobs did not all run";
  std::ofstream(release_b) << "go";
  std::vector<std::string> wait_b = {"wait", "--timeout", "60s"};
  wait_b.insert(wait_b.end(), b_jobs.begin(), b_jobs.end());
  auto wb = c.Corral(wait_b);
  ASSERT_EQ(wb.exit_code, 0) << "queue b's jobs must run: " << wb.out << wb.err;

  // Exactly four of A's jobs were preempted: each got SIGTERM, then SIGKILL (it ignored the
  // TERM), and went back to pending as a new run.
  int preempted = 0;
  for (const std::string& id : a_jobs) {
    auto r = c.Corral({"show", id, "-o", "json"});
    Json job = Json::parse(r.out);
    const Json& first = job["runs"][0];
    if (first["state"] != "preempted") continue;
    ++preempted;
    EXPECT_EQ(first["exit_codes"][0], -9) << "the victim ignored SIGTERM, so SIGKILL must end it";
    EXPECT_NE(first["reason"].get<std::string>().find("preempted"), std::string::npos);
    std::ifstream term(c.dir() + "/checkpoints/job-" + id + "/term");
    EXPECT_TRUE(term.good()) << "job " << id << " was killed without SIGTERM first";
    auto show = c.Corral({"show", id});
    EXPECT_NE(show.out.find("preempted"), std::string::npos) << "corral show must say why";
  }
  EXPECT_EQ(preempted, 4);

  // Release the survivors; every job of A completes, the preempted ones in a second run.
  std::ofstream(release) << "go";
  std::vector<std::string> wait_a = {"wait", "--timeout", "60s"};
  wait_a.insert(wait_a.end(), a_jobs.begin(), a_jobs.end());
  auto wa = c.Corral(wait_a);
  EXPECT_EQ(wa.exit_code, 0) << wa.out << wa.err;
  int resumed = 0;
  for (const std::string& id : a_jobs) {
    Json job = Json::parse(c.Corral({"show", id, "-o", "json"}).out);
    if (job["runs"].size() == 2) {
      ++resumed;
      EXPECT_EQ(c.Corral({"logs", id}).out, "resumed run " + id + ".2\n");
    }
  }
  EXPECT_EQ(resumed, 4);
}

}  // namespace
}  // namespace corral::testing
