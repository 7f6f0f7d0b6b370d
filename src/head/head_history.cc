// GET /v1/history: the jobs of a period as recorded, for `corral whatif` to replay. The head
// only gathers (live jobs from memory, retired ones from the store on the archive thread); the
// replay runs in the client, so a what-if over weeks of jobs never holds up the state machine.
#include <algorithm>
#include <functional>

#include "head/head_internal.h"

namespace corral::head {

namespace {

// What a replay needs of a job: scheduling inputs and run times, not how to run it (the
// environment may hold secrets; events and steps are most of a job's size).
void KeepWhatSchedulingSees(Job* j) {
  j->spec.env.clear();
  j->spec.command.clear();
  j->spec.workdir.clear();
  j->spec.container = {};
  j->events.clear();
  for (Run& r : j->runs) r.steps.clear();
}

}  // namespace

void Head::Execute(const Caller& by, TimeMs now, GetHistory command, Callback<History> done) {
  if (by.kind != Caller::Kind::kUser || by.role != Role::kAdmin) {
    return Reply<History>(std::move(done),
                          PermissionDenied("only an admin may read the cluster's history"));
  }
  if (command.since_ms <= 0) {
    return Reply<History>(std::move(done), InvalidArgument("since: want a period > 0"));
  }
  auto history = std::make_shared<History>();
  history->now = now;
  history->from = now > command.since_ms ? now - command.since_ms : 0;
  const sched::SchedulerConfig& s = config_.core.scheduler;
  history->policy = s.policy;
  history->min_runtime_before_preempt_ms = s.min_runtime_before_preempt_ms;
  history->fair_share_half_life_ms = s.fair_share_half_life_ms;
  for (const auto& [name, node] : core_.state().nodes) history->nodes.push_back(node);
  for (const auto& [name, queue] : core_.state().queues) history->queues.push_back(queue);
  const JobFilter live_since{.limit = INT32_MAX, .ended_since = std::max<TimeMs>(1, history->from)};
  for (const auto& [id, job] : core_.state().jobs) {
    if (!FilterMatches(live_since, job)) continue;
    history->jobs.push_back(job);
    KeepWhatSchedulingSees(&history->jobs.back());
  }
  if (!ReachesRetired(live_since, now)) return Reply<History>(std::move(done), std::move(*history));
  // Jobs that ended in the period and left memory: from the store, a page at a time.
  auto read = [this, from = live_since.ended_since]() -> Result<std::vector<Job>> {
    std::vector<Job> out;
    Status st = ForEachRetiredJob(*store_, {.ended_since = from, .limit = 2000}, [&](Job& j) {
      KeepWhatSchedulingSees(&j);
      out.push_back(std::move(j));
      return true;
    });
    if (!st.ok()) return st;
    return out;
  };
  ReadRetired(std::move(read), [this, history, done = std::move(done)](auto retired) mutable {
    if (!retired.ok()) return Reply<History>(std::move(done), retired.status());
    std::vector<Job>& all = history->jobs;
    all.insert(all.end(), std::make_move_iterator(retired->begin()),
               std::make_move_iterator(retired->end()));
    // A job retired meanwhile may be in both.
    std::stable_sort(all.begin(), all.end(),
                     [](const Job& a, const Job& b) { return a.id < b.id; });
    all.erase(std::unique(all.begin(), all.end(),
                          [](const Job& a, const Job& b) { return a.id == b.id; }),
              all.end());
    Reply<History>(std::move(done), std::move(*history));
  });
}

}  // namespace corral::head
