// The head's one entry for commands (Run) and the commands the core does not answer alone:
// those that read retired jobs from the store (on the archive thread), draw a secret, or back
// up the store.
#include <algorithm>
#include <boost/asio/post.hpp>

#include "head/head_internal.h"

namespace corral::head {

namespace asio = boost::asio;

Status ForEachRetiredJob(const store::Store& store, store::RetiredJobsQuery q,
                         const std::function<bool(Job&)>& each) {
  while (true) {
    auto page = store.ReadRetiredJobs(q);
    if (!page.ok()) return page.status();
    for (Job& j : *page) {
      if (!each(j)) return Status::Ok();
    }
    if (static_cast<int32_t>(page->size()) < q.limit) return Status::Ok();
    q.after = page->back().id;
  }
}

template <typename C>
void Head::Run(Presented presented, C command, Callback<typename C::Answer> done) {
  Post([this, presented = std::move(presented), command = std::move(command),
        done = std::move(done)]() mutable {
    TimeMs now = clock_->Now();
    auto who = Admit(presented, now, ForAgents<C>(), done);
    if (!who) return;
    Execute(*who, now, std::move(command), std::move(done));
  });
}

// The commands the core answers alone.
template <typename C>
void Head::Execute(const Caller& by, TimeMs now, C command, Callback<typename C::Answer> done) {
  Result<typename C::Answer> r = std::move(command)(core_, by, now);
  Drain();
  Reply<typename C::Answer>(std::move(done), std::move(r));
}

#define CORRAL_INSTANTIATE_RUN(C) template void Head::Run<C>(Presented, C, Callback<C::Answer>);
CORRAL_HEAD_COMMANDS(CORRAL_INSTANTIATE_RUN)
#undef CORRAL_INSTANTIATE_RUN

void Head::ReadRetired(std::function<Result<std::vector<Job>>()> read,
                       std::function<void(Result<std::vector<Job>>)> then) {
  asio::post(archive_io_, [this, read = std::move(read), then = std::move(then)]() mutable {
    auto jobs = std::make_shared<Result<std::vector<Job>>>(read());
    Post([jobs, then = std::move(then)] { then(std::move(*jobs)); });
  });
}

// A job by id; a retired one from the store, seen as `by` may see it.
void Head::FindJob(const Caller& by, JobId id, bool for_logs, Callback<Job> done) {
  Result<Job> live = for_logs ? core_.GetJobForLogs(by, id) : core_.GetJob(by, id);
  if (live.ok() || !core_.RetiredState(id)) return Reply<Job>(std::move(done), std::move(live));
  ReadRetired([this, id] { return store_->ReadRetiredJobs({.id = id, .limit = 1}); },
              [this, by, id, done = std::move(done), for_logs](auto jobs) mutable {
                if (!jobs.ok()) return Reply<Job>(std::move(done), jobs.status());
                if (jobs->empty())
                  return Reply<Job>(std::move(done), NotFound("no job " + std::to_string(id)));
                Job& job = jobs->front();
                Status may = for_logs ? core_.MayReadLogs(by, job) : Status::Ok();
                if (!may.ok()) return Reply<Job>(std::move(done), may);
                Reply<Job>(std::move(done), core_.JobAsSeenBy(by, std::move(job)));
              });
}

void Head::Execute(const Caller& by, TimeMs, GetJob command, Callback<Job> done) {
  FindJob(by, command.id, /*for_logs=*/false, std::move(done));
}

void Head::Execute(const Caller& by, TimeMs, LocateLogs command, Callback<LogSource> done) {
  FindJob(by, command.id, /*for_logs=*/true,
          [this, query = command.query, done = std::move(done)](Result<Job> job) mutable {
            if (!job.ok()) return Reply<LogSource>(std::move(done), job.status());
            Reply<LogSource>(std::move(done), core_.LocateLogs(*job, query));
          });
}

bool Head::ReachesRetired(const JobFilter& f, TimeMs now) const {
  if (core_.state().retired.empty()) return false;
  if (!f.states.empty() && std::none_of(f.states.begin(), f.states.end(), IsTerminal)) {
    return false;
  }
  // Jobs that ended before now - retain_finished may have left memory.
  return config_.core.retain_finished_ms <= 0 ||
         f.ended_since <= now - config_.core.retain_finished_ms;
}

void Head::Execute(const Caller& by, TimeMs now, ListJobs command,
                   Callback<std::vector<Job>> done) {
  const JobFilter f = std::move(command.filter);
  std::vector<Job> live = core_.ListJobs(by, f);
  if (!ReachesRetired(f, now)) return Reply<std::vector<Job>>(std::move(done), std::move(live));
  // Retired jobs that match, a page of rows at a time, until the limit.
  auto read = [this, f]() -> Result<std::vector<Job>> {
    constexpr int32_t kPage = 1000;
    // Where every row the store returns matches, read no more rows than asked for (the
    // dashboard probes with limit=1).
    bool store_filters_all = f.states.empty();
    store::RetiredJobsQuery q{.after = f.after,
                              .ended_since = f.ended_since,
                              .limit = store_filters_all ? std::min(f.limit, kPage) : kPage,
                              .user = f.user,
                              .queue = f.queue};
    // An array's elements have consecutive ids from its own: start there, stop past them.
    if (f.array_id != 0) q.after = std::max(q.after, f.array_id - 1);
    std::vector<Job> out;
    Status st = ForEachRetiredJob(*store_, q, [&](Job& j) {
      if (f.array_id != 0 && j.array_id != f.array_id) return false;
      if (FilterMatches(f, j)) out.push_back(std::move(j));
      return static_cast<int32_t>(out.size()) < f.limit;
    });
    if (!st.ok()) return st;
    return out;
  };
  ReadRetired(std::move(read), [this, by, limit = f.limit, live = std::move(live),
                                done = std::move(done)](auto retired) mutable {
    if (!retired.ok()) return Reply<std::vector<Job>>(std::move(done), retired.status());
    std::vector<Job> all;
    for (Job& j : *retired) all.push_back(core_.JobAsSeenBy(by, std::move(j)));
    all.insert(all.end(), std::make_move_iterator(live.begin()),
               std::make_move_iterator(live.end()));
    // A job retired meanwhile may be in both.
    std::stable_sort(all.begin(), all.end(),
                     [](const Job& a, const Job& b) { return a.id < b.id; });
    all.erase(std::unique(all.begin(), all.end(),
                          [](const Job& a, const Job& b) { return a.id == b.id; }),
              all.end());
    if (static_cast<int32_t>(all.size()) > limit) all.resize(static_cast<size_t>(limit));
    Reply<std::vector<Job>>(std::move(done), std::move(all));
  });
}

void Head::Execute(const Caller& by, TimeMs now, GetUsage command, Callback<UsageReport> done) {
  const UsageBy group = command.by;
  const DurationMs since_ms = command.since_ms;
  if (Status ok = HeadCore::CheckUsage(by, since_ms); !ok.ok()) {
    return Reply<UsageReport>(std::move(done), ok);
  }
  TimeMs from = now > since_ms ? now - since_ms : 0;
  JobFilter ended{.ended_since = from};
  if (!ReachesRetired(ended, now)) {
    return Reply<UsageReport>(std::move(done), core_.Usage(UsageAccumulator(group, from, now)));
  }
  // Retired jobs that ended in the period add up on the archive thread, a page at a time.
  auto acc = std::make_shared<UsageAccumulator>(group, from, now);
  auto read = [this, acc, from]() -> Result<std::vector<Job>> {
    Status st = ForEachRetiredJob(*store_, {.ended_since = from, .limit = 2000}, [&](Job& j) {
      acc->Add(j);
      return true;
    });
    if (!st.ok()) return st;
    return std::vector<Job>();
  };
  ReadRetired(std::move(read), [this, acc, done = std::move(done)](auto read) mutable {
    if (!read.ok()) return Reply<UsageReport>(std::move(done), read.status());
    Reply<UsageReport>(std::move(done), core_.Usage(std::move(*acc)));
  });
}

void Head::Execute(const Caller&, TimeMs now, GetClusterSeries command,
                   Callback<ClusterSeriesView> done) {
  if (command.since_ms < 0) {
    return Reply<ClusterSeriesView>(
        std::move(done), InvalidArgument("field 'since': got " + std::to_string(command.since_ms) +
                                         " ms, want 0 (every point kept) or more"));
  }
  const TimeMs from = command.since_ms == 0 || command.since_ms >= now ? 0 : now - command.since_ms;
  Reply<ClusterSeriesView>(std::move(done), cluster_series_.Since(from));
}

// A huge array is cancelled a slice at a time (CancelRest), so that other commands are
// answered between slices.
void Head::Execute(const Caller& by, TimeMs now, CancelJob command, Callback<Job> done) {
  bool more = false;
  Result<Job> r =
      core_.Cancel(by, command.id, now, command.element_only, config_.cancel_slice, &more);
  Drain();
  if (!more) return Reply<Job>(std::move(done), std::move(r));
  CancelRest(by, command.id, std::move(done));
}

void Head::CancelRest(Caller by, JobId id, Callback<Job> done) {
  // Once the slice before is durable: a reply waits for the commit that holds what it saw, so
  // the slices must not pile up into one huge commit ahead of other commands' replies.
  // Nor may they make the snapshot overdue, which would then ride with a slice's commit: one
  // due is written alone between slices, while replies that saw only durable changes go out.
  auto shared = std::make_shared<Callback<Job>>(std::move(done));
  auto fail = [shared](const Status& st) { (*shared)(StoreFailed(st)); };
  AfterDurable(
      [this, by = std::move(by), id, shared, fail]() mutable {
        if (!failed_ && !inflight_ && next_changes_.empty() && next_edits_.empty()) {
          log_.MaybeSnapshot(core_, false, &next_edits_);
        }
        if (next_edits_.empty()) return CancelSlice(std::move(by), id, std::move(*shared));
        PostFlush();
        AfterDurable([this, by, id, shared] { CancelSlice(by, id, std::move(*shared)); }, fail);
      },
      fail);
}

// The rest of a huge array, a slice at a time: each slice is committed (with whatever else
// happened meanwhile) before the next is made, so the commands that come in meanwhile are
// answered between slices rather than after the whole array. The answer comes after the last.
void Head::CancelSlice(Caller by, JobId id, Callback<Job> done) {
  Post([this, by = std::move(by), id, done = std::move(done)]() mutable {
    if (failed_) return done(StoreFailed(Unavailable("an earlier commit failed")));
    bool more = false;
    Result<Job> r =
        core_.Cancel(by, id, clock_->Now(), /*element_only=*/false, config_.cancel_slice, &more);
    Drain();
    if (more) return CancelRest(std::move(by), id, std::move(done));
    // Others may have ended the last elements meanwhile: the array is cancelled all the same.
    if (!r.ok() && r.status().code() == ErrorCode::kFailedPrecondition) r = core_.GetJob(by, id);
    Reply<Job>(std::move(done), std::move(r));
  });
}

void Head::Execute(const Caller& by, TimeMs now, CreateToken command, Callback<NewToken> done) {
  std::string secret = random_->Secret();
  auto c = core_.IssueToken(by, command.request, secret, now);
  Drain();
  if (!c.ok()) return Reply<NewToken>(std::move(done), c.status());
  Reply<NewToken>(std::move(done), NewToken{*c, std::move(secret)});
}

void Head::Execute(const Caller& by, TimeMs now, RegisterAgent command,
                   Callback<RegisterResponse> done) {
  auto r = core_.Register(by, std::move(command.request), random_->Secret(), now);
  Drain();
  Reply<RegisterResponse>(std::move(done), std::move(r));
}

void Head::Execute(const Caller& by, TimeMs now, BackupStore command,
                   Callback<store::BackupInfo> done) {
  std::string path = std::move(command.path);
  if (by.kind != Caller::Kind::kUser || by.role != Role::kAdmin) {
    return Reply<store::BackupInfo>(std::move(done),
                                    PermissionDenied("only an admin may back up the store"));
  }
  if (backup_running_) {
    return Reply<store::BackupInfo>(
        std::move(done), FailedPrecondition("a backup is already running; try again when it ends"));
  }
  backup_running_ = true;
  Audit(Json{{"at", now},
             {"who", by.name},
             {"role", RoleName(by.role)},
             {"what", "backup"},
             {"path", path}});
  if (backup_thread_.joinable()) backup_thread_.join();  // the last one, long over
  backup_thread_ = std::thread([this, path = std::move(path), done = std::move(done)]() mutable {
    Result<store::BackupInfo> r = store_->Backup(path);
    Post([this, r = std::move(r), done = std::move(done)]() mutable {
      backup_running_ = false;
      Reply<store::BackupInfo>(std::move(done), std::move(r));
    });
  });
}

}  // namespace corral::head
