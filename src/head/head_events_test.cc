// The head's shell: its event stream (resumed, filtered per caller, too far behind), and jobs
// retired from memory read back from the store (one at a time, and as the admins' history).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <set>
#include <thread>

#include "head/head.h"
#include "head/head_shell_fixture.h"
#include "testing/fakes.h"

namespace corral::head {
namespace {

using namespace shell_testing;  // NOLINT: the fixture's names

class HeadEvents : public HeadShell {
 protected:
  Answer<Events> Watch(const std::string& bearer, uint64_t since, int32_t max = 1000,
                       DurationMs wait = 0) {
    return Async<Events>([&](auto cb) {
             head_->Run(bearer, WatchEvents{since, max, wait}, cb);
           })
        .get();
  }
  // Reads the whole stream after `since` in chunks of `max`, as a client that reconnects
  // after every answer would.
  std::vector<uint64_t> ReadAll(uint64_t since, int32_t max) {
    std::vector<uint64_t> revs;
    for (;;) {
      auto e = Watch(kAdmin, since, max);
      EXPECT_TRUE(e.result.ok());
      EXPECT_FALSE(e.result->reset);
      if (e.result->events.empty()) return revs;
      for (const Json& c : e.result->events) revs.push_back(c["rev"].get<uint64_t>());
      since = revs.back();
    }
  }
};

TEST_F(HeadEvents, TheStreamResumesWithoutLosingOrRepeatingAChange) {
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(Submit().result.ok());
  std::vector<uint64_t> revs = ReadAll(0, 2);
  ASSERT_FALSE(revs.empty());
  for (size_t i = 0; i < revs.size(); ++i) EXPECT_EQ(revs[i], i + 1) << "gap or repeat";
  // A held watch is answered by the next durable change, and only by it.
  uint64_t last = revs.back();
  auto held = Async<Events>([&](auto cb) {
    head_->Run(kAdmin, WatchEvents{last, 1000, 10000}, cb);
  });
  EXPECT_EQ(held.wait_for(std::chrono::milliseconds(100)), std::future_status::timeout);
  ASSERT_TRUE(Submit().result.ok());
  auto e = held.get();
  ASSERT_TRUE(e.result.ok());
  ASSERT_EQ(e.result->events.size(), 1u);
  EXPECT_EQ(e.result->events[0]["rev"], last + 1);
  EXPECT_EQ(e.result->events[0]["type"], "job_submitted");
  EXPECT_EQ(e.result->events[0]["kind"], "job");
  // ...and across a restart of the head, from the changes its store still holds.
  head_.reset();
  Open();
  ASSERT_TRUE(List().result.ok());  // the new leadership's first change is durable
  std::vector<uint64_t> after = ReadAll(last + 1, 3);
  ASSERT_FALSE(after.empty());
  EXPECT_EQ(after.front(), last + 2);
  for (size_t i = 1; i < after.size(); ++i) EXPECT_EQ(after[i], after[i - 1] + 1);
}

TEST_F(HeadEvents, OthersSeeAJobButNotItsEnvironmentAndNoSecrets) {
  auto ana = Async<NewToken>([&](auto cb) {
               head_->Run(kAdmin, CreateToken{{"ana", Role::kUser, {}, 0}}, cb);
             }).get();
  auto bob = Async<NewToken>([&](auto cb) {
               head_->Run(kAdmin, CreateToken{{"bob", Role::kUser, {}, 0}}, cb);
             }).get();
  JobSpec spec;
  spec.command = {"true"};
  spec.env = {{"WANDB_API_KEY", "hush"}};
  ASSERT_TRUE(Async<Job>([&](auto cb) {
                head_->Run(ana.result->secret, SubmitJob{spec, "", ""}, cb);
              })
                  .get()
                  .result.ok());
  auto seen = [&](const std::string& bearer) {
    auto e = Watch(bearer, 0);
    EXPECT_TRUE(e.result.ok());
    return Json(e.result->events).dump();
  };
  EXPECT_NE(seen(ana.result->secret).find("hush"), std::string::npos);
  std::string as_bob = seen(bob.result->secret);
  EXPECT_NE(as_bob.find("job_submitted"), std::string::npos);
  EXPECT_EQ(as_bob.find("hush"), std::string::npos);
  EXPECT_EQ(as_bob.find("\"hash\""), std::string::npos);
  EXPECT_EQ(Watch("nobody", 0).result.status().code(), ErrorCode::kUnauthenticated);
}

// As /v1/tokens: a user's events show their own credentials only (not the admin's, another
// user's or the nodes'); an admin's show every one.
TEST_F(HeadEvents, AUserSeesOnlyTheirOwnCredentials) {
  auto token = [&](const std::string& user) {
    return Async<NewToken>([&](auto cb) {
             head_->Run(kAdmin, CreateToken{{user, Role::kUser, {}, 0}}, cb);
           })
        .get()
        .result;
  };
  auto ana = token("ana"), bob = token("bob");
  ASSERT_TRUE(ana.ok() && bob.ok());
  std::map<std::string, size_t> token_events;
  auto credentials = [&](const std::string& bearer) {
    auto e = Watch(bearer, 0);
    EXPECT_TRUE(e.result.ok());
    std::set<std::string> names;
    for (const Json& c : e.result->events) {
      token_events[bearer] += c.value("kind", "") == "token";
      if (c.contains("credential")) names.insert(c["credential"]["who"]["name"].get<std::string>());
    }
    return names;
  };
  EXPECT_EQ(credentials(bob->secret), std::set<std::string>{"bob"});
  std::string as_bob = Json(Watch(bob->secret, 0).result->events).dump();
  EXPECT_EQ(as_bob.find(ana->credential.id), std::string::npos) << as_bob;
  std::set<std::string> all = credentials(kAdmin);
  for (const char* name : {"admin", "ana", "bob"}) EXPECT_TRUE(all.count(name)) << name;
  EXPECT_EQ(token_events[bob->secret], token_events[kAdmin])
      << "the events themselves stay, for the stream's order";
}

TEST_F(HeadEvents, AClientTooFarBehindIsToldToListAgain) {
  head_.reset();
  auto store = std::make_unique<FaultStore>(std::make_unique<MemoryStore>(disk_));
  HeadConfig config;
  config.event_buffer = 3;
  auto h = Head::Create(config, std::move(store), &clock_, &random_, {kAdmin, "j"});
  ASSERT_TRUE(h.ok());
  head_ = std::move(*h);
  head_->Start();
  for (int i = 0; i < 6; ++i) ASSERT_TRUE(Submit().result.ok());
  auto e = Watch(kAdmin, 0);
  ASSERT_TRUE(e.result.ok());
  EXPECT_TRUE(e.result->reset);
  EXPECT_GE(e.result->revision, 6u);
  auto recent = Watch(kAdmin, e.result->revision - 2);
  ASSERT_TRUE(recent.result.ok());
  EXPECT_FALSE(recent.result->reset);
  EXPECT_EQ(recent.result->events.size(), 2u);
}

// Retention through the shell: a job that ended longer ago than --retain-finished leaves the
// head's memory, and the head answers for it from the store: by id, in a listing that
// reaches back far enough, and in usage; after a restart it is not loaded again.
TEST_F(HeadShell, ARetiredJobIsReadFromTheStoreOnDemand) {
  config_.tick_ms = 5;
  config_.core.retain_finished_ms = kHour;
  head_.reset();
  Open();
  auto job = Submit();
  ASSERT_TRUE(job.result.ok());
  JobId id = job.result->id;
  JobSpec array;
  array.command = {"true"};
  array.array = "0-2";
  auto first = Async<Job>([&](auto cb) { head_->Run(kAdmin, SubmitJob{array, "", ""}, cb); }).get();
  ASSERT_TRUE(first.result.ok()) << first.result.status().ToString();
  JobId array_id = first.result->id;
  for (JobId j : {id, array_id}) {
    auto cancelled = Async<Job>([&](auto cb) {
                       head_->Run(kAdmin, CancelJob{j, false}, cb);
                     }).get();
    ASSERT_TRUE(cancelled.result.ok()) << cancelled.result.status().ToString();
  }
  auto recent = [&] {
    JobFilter f;
    f.ended_since = clock_.Now() - 30 * kMinute;
    return Async<std::vector<Job>>([&](auto cb) { head_->Run(kAdmin, ListJobs{f}, cb); }).get();
  };
  ASSERT_EQ(recent().result->size(), 4u) << "they just ended";
  clock_.Advance(2 * kHour);
  auto retired = [&] {
    std::lock_guard<std::mutex> l(disk_->mu);
    return disk_->state.retired.size() == 4;
  };
  for (int i = 0; i < 500 && !retired(); ++i) {
    clock_.Advance(11 * kMinute);  // the next retirement pass
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(retired()) << "the job was never retired";
  for (int restart = 0; restart < 2; ++restart) {
    auto got = Async<Job>([&](auto cb) { head_->Run(kAdmin, GetJob{id}, cb); }).get();
    ASSERT_TRUE(got.result.ok()) << got.result.status().ToString();
    EXPECT_EQ(got.result->state, JobState::kCancelled);
    EXPECT_EQ(got.result->spec.command, std::vector<std::string>{"true"});
    auto all = List();  // no time bound: reaches the retired rows
    ASSERT_TRUE(all.result.ok()) << all.result.status().ToString();
    ASSERT_EQ(all.result->size(), 4u);
    EXPECT_EQ(all.result->front().id, id);
    JobFilter elements;
    elements.array_id = array_id;
    auto listed =
        Async<std::vector<Job>>([&](auto cb) { head_->Run(kAdmin, ListJobs{elements}, cb); }).get();
    ASSERT_TRUE(listed.result.ok()) << listed.result.status().ToString();
    ASSERT_EQ(listed.result->size(), 3u);
    EXPECT_EQ(listed.result->back().array_index, 2);
    for (const auto& [user, want] : {std::pair<std::string, size_t>{"admin", 4}, {"nobody", 0}}) {
      JobFilter by_user;
      by_user.user = user;
      auto mine = Async<std::vector<Job>>([&](auto cb) {
                    head_->Run(kAdmin, ListJobs{by_user}, cb);
                  }).get();
      ASSERT_TRUE(mine.result.ok()) << mine.result.status().ToString();
      EXPECT_EQ(mine.result->size(), want) << user;
    }
    EXPECT_TRUE(recent().result->empty());
    auto missing = Async<Job>([&](auto cb) { head_->Run(kAdmin, GetJob{id + 100}, cb); }).get();
    EXPECT_EQ(missing.result.status().code(), ErrorCode::kNotFound);
    head_.reset();
    Open();
  }
  auto loaded = MemoryStore(disk_).Load();
  ASSERT_TRUE(loaded.ok());
  EXPECT_TRUE(loaded->jobs.empty()) << "a restarted head does not load retired jobs";
}

TEST_F(HeadShell, TheHistoryHoldsLiveAndRetiredJobsWithoutSecretsForAdminsOnly) {
  config_.tick_ms = 5;
  config_.core.retain_finished_ms = kHour;
  head_.reset();
  Open();
  auto history = [&](DurationMs since, const std::string& bearer = kAdmin) {
    return Async<History>([&](auto cb) { head_->Run(bearer, GetHistory{since}, cb); }).get();
  };
  JobSpec spec;
  spec.command = {"true"};
  spec.env = {{"TOKEN", "secret"}};
  auto ended = Async<Job>([&](auto cb) { head_->Run(kAdmin, SubmitJob{spec, "", ""}, cb); }).get();
  ASSERT_TRUE(ended.result.ok()) << ended.result.status().ToString();
  auto cancelled = Async<Job>([&](auto cb) {
                     head_->Run(kAdmin, CancelJob{ended.result->id, false}, cb);
                   }).get();
  ASSERT_TRUE(cancelled.result.ok());
  clock_.Advance(2 * kHour);
  auto retired = [&] {
    std::lock_guard<std::mutex> l(disk_->mu);
    return disk_->state.retired.size() == 1;
  };
  for (int i = 0; i < 500 && !retired(); ++i) {
    clock_.Advance(11 * kMinute);  // the next retirement pass
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(retired()) << "the job was never retired";
  auto live = Submit();  // pending: no agents
  ASSERT_TRUE(live.result.ok());

  auto week = history(7 * kDay);
  ASSERT_TRUE(week.result.ok()) << week.result.status().ToString();
  ASSERT_EQ(week.result->jobs.size(), 2u) << "the retired job from the store, the live one";
  EXPECT_EQ(week.result->jobs[0].id, ended.result->id);
  EXPECT_EQ(week.result->jobs[0].state, JobState::kCancelled);
  EXPECT_TRUE(week.result->jobs[0].spec.env.empty()) << "no environment in the history";
  EXPECT_TRUE(week.result->jobs[0].spec.command.empty());
  EXPECT_TRUE(week.result->jobs[0].events.empty());
  EXPECT_EQ(week.result->jobs[1].id, live.result->id);
  EXPECT_EQ(week.result->now, clock_.Now());
  EXPECT_EQ(week.result->from, std::max<TimeMs>(0, clock_.Now() - 7 * kDay));
  EXPECT_EQ(week.result->policy, config_.core.scheduler.policy);

  auto recent = history(kHour);
  ASSERT_TRUE(recent.result.ok());
  ASSERT_EQ(recent.result->jobs.size(), 1u) << "the cancelled job ended before the period";
  EXPECT_EQ(recent.result->jobs[0].id, live.result->id);

  auto ana = Async<NewToken>([&](auto cb) {
               head_->Run(kAdmin, CreateToken{{"ana", Role::kUser, {}, 0}}, cb);
             }).get();
  ASSERT_TRUE(ana.result.ok());
  auto refused = history(kDay, ana.result->secret);
  EXPECT_EQ(refused.result.status().code(), ErrorCode::kPermissionDenied);
}

}  // namespace
}  // namespace corral::head
