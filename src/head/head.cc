#include "head/head.h"

#include <malloc.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <charconv>
#include <filesystem>
#include <limits>

#include "core/version.h"

namespace corral::head {

namespace asio = boost::asio;

namespace {

// Calls `each` on the retired jobs `q` selects, reading q.limit rows at a time, until `each`
// returns false or the rows run out.
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

CoreConfig ToCoreConfig(const HeadConfig& c) {
  CoreConfig core;
  core.checkpoint_root = c.checkpoint_root;
  core.unreachable_after_ms = c.unreachable_after_ms;
  core.down_after_ms = c.down_after_ms;
  core.idle_threshold_percent = c.idle_threshold_percent;
  core.idle_after_ms = c.idle_after_ms;
  core.idle_stop_queues = c.idle_stop_queues;
  core.idle_stop_warning_ms = c.idle_stop_warning_ms;
  core.retain_finished_ms = c.retain_finished_ms;
  core.scheduler = c.scheduler;
  return core;
}

// What a head starts from: a state, the changes to apply on top (some of which a warm
// state may hold already), and the revision of the store's snapshot rows.
struct StartingState {
  ClusterState state;
  std::vector<Change> tail;
  uint64_t snapshot_revision = 0;
};

Result<StartingState> LoadAll(store::Store& store) {
  auto loaded = store.Load();
  if (!loaded.ok()) return loaded.status();
  auto decoded = DecodeStoredState(std::move(*loaded));
  if (!decoded.ok()) return decoded.status();
  uint64_t rev = decoded->snapshot.revision;
  return StartingState{std::move(decoded->snapshot), std::move(decoded->tail), rev};
}

// A standby taking over: its warm state, and the changes since the snapshot rows (they must
// go into the next rows this head writes), read from the older of the two revisions.
Result<StartingState> TailSinceSnapshot(store::Store& store, ClusterState warm) {
  auto meta = store.ReadMeta(store::kSnapshotRevisionKey);
  if (!meta.ok()) return meta.status();
  uint64_t snapshot = 0;  // as DecodeStoredState reads it: absent is 0, garbage an error
  if (!meta->empty() && std::from_chars(meta->data(), meta->data() + meta->size(), snapshot).ptr !=
                            meta->data() + meta->size()) {
    return Internal(std::string("store meta '") + store::kSnapshotRevisionKey +
                    "': not a number: " + *meta);
  }
  auto recs =
      store.ReadChanges(std::min(snapshot, warm.revision), std::numeric_limits<int32_t>::max());
  if (!recs.ok()) return recs.status();
  StartingState s{std::move(warm), {}, snapshot};
  for (const store::ChangeRecord& rec : *recs) {
    auto c = ChangeFromJson(Json::parse(rec.doc, nullptr, false));
    if (!c.ok()) return c.status();
    s.tail.push_back(std::move(*c));
  }
  return s;
}

Status StoreFailed(const Status& st) {
  return Unavailable("the head's store failed a commit (" + st.message() +
                     "); nothing of this request is durable; the head must restart");
}

Json AuditRecordOf(const Change& c) {
  Json change = EventJson(c, Caller::System());
  Json record{{"at", c.at},
              {"rev", c.revision},
              {"who", c.by.name},
              {"role", RoleName(c.by.role)},
              {"what", ChangeName(c.what)},
              {change.value("kind", "object"), change.value("key", Json())}};
  if (change.contains("reason")) record["reason"] = change["reason"];
  if (const auto* t = std::get_if<TokenIssued>(&c.what)) {
    record["for"] = t->credential.who.name;
    record["role_granted"] = RoleName(t->credential.who.role);
  }
  return record;
}

// What an admin or a queue admin changed: who, what, when, which revision. Their reads and
// everyone else's changes are in the change log already; this is the short list to review.
// Written once the changes are durable (a change the store refused did not happen), on the
// commit thread, one write for a batch.
void AuditPrivileged(AuditLog& audit, const std::vector<Change>& changes) {
  std::vector<Json> records;
  for (const Change& c : changes) {
    if (c.by.kind != Caller::Kind::kUser || c.by.role == Role::kUser) continue;
    records.push_back(AuditRecordOf(c));
  }
  if (!records.empty()) audit.WriteAll(records);
}

}  // namespace

Result<std::unique_ptr<Head>> Head::Open(HeadConfig config, const Clock* clock,
                                         std::unique_ptr<store::Store> store,
                                         std::optional<ClusterState> warm) {
  std::error_code ec;
  std::filesystem::create_directories(config.state_dir, ec);
  if (ec) return Unavailable("cannot create state dir " + config.state_dir + ": " + ec.message());
  if (config.checkpoint_root.empty()) config.checkpoint_root = config.state_dir + "/checkpoints";
  if (!store) {
    auto opened = store::OpenStore(config.store_url, config.state_dir);
    if (!opened.ok()) return opened.status();
    store = std::move(*opened);
  }
  auto random = std::make_unique<UrandomSource>();
  auto admin = LoadOrCreateToken(config.state_dir + "/admin.token", random->Secret());
  if (!admin.ok()) return admin.status();
  auto join = LoadOrCreateToken(config.state_dir + "/join.token", random->Secret());
  if (!join.ok()) return join.status();
  auto audit = AuditLog::Open(config.state_dir + "/audit.log");
  if (!audit.ok()) return audit.status();
  auto head = Create(std::move(config), std::move(store), clock, random.get(), {*admin, *join},
                     std::move(warm));
  if (head.ok()) {
    (*head)->owned_random_ = std::move(random);
    (*head)->audit_ = std::move(*audit);
  }
  return head;
}

Result<std::unique_ptr<Head>> Head::Create(HeadConfig config, std::unique_ptr<store::Store> store,
                                           const Clock* clock, RandomSource* random,
                                           Tokens bootstrap, std::optional<ClusterState> warm) {
  auto decoded = warm ? TailSinceSnapshot(*store, std::move(*warm)) : LoadAll(*store);
  if (!decoded.ok()) return decoded.status();
  uint64_t snapshot_revision = decoded->snapshot_revision;
  std::unique_ptr<Head> head(new Head(std::move(config), std::move(store), clock, random));
  head->log_ = EditLog(head->config_.durability, snapshot_revision);
  HeadCore& core = head->core_;
  TimeMs now = clock->Now();
  CORRAL_RETURN_IF_ERROR(core.Recover(std::move(decoded->state), decoded->tail, now));
  // The event stream resumes across a restart from the changes the store still holds.
  head->durable_revision_ = core.revision();
  uint64_t keep = head->config_.event_buffer;
  auto recent = head->store_->ReadChanges(core.revision() > keep ? core.revision() - keep : 0,
                                          static_cast<int32_t>(keep));
  if (!recent.ok()) return recent.status();
  for (const store::ChangeRecord& rec : *recent) {
    auto c = ChangeFromJson(Json::parse(rec.doc, nullptr, false));
    if (!c.ok()) return c.status();
    head->recent_.push_back(std::move(*c));
  }
  if (!bootstrap.admin.empty() && !core.HasCredentialFor(Caller::Kind::kUser, Role::kAdmin)) {
    TokenRequest admin{head->config_.admin_user, Role::kAdmin, {}, 0};
    CORRAL_RETURN_IF_ERROR(core.IssueToken(Caller::System(), admin, bootstrap.admin, now).status());
  }
  if (!bootstrap.join.empty() && !core.HasCredentialFor(Caller::Kind::kJoin, Role::kUser)) {
    TokenRequest join{"@join", Role::kUser, {}, 0};
    CORRAL_RETURN_IF_ERROR(core.IssueToken(Caller::System(), join, bootstrap.join, now).status());
  }
  // A new leadership; it is durable before any answer (answers wait for the first batch).
  core.Start(now, random->Secret());
  head->epoch_ = core.state().epoch;
  head->tokens_ = std::move(bootstrap);
  head->Drain();
  if (!head->config_.advertise_url.empty()) {
    head->next_edits_.push_back(store::PutMeta{store::kLeaderUrlKey, head->config_.advertise_url});
  }
  return head;
}

Head::Head(HeadConfig config, std::unique_ptr<store::Store> store, const Clock* clock,
           RandomSource* random)
    : config_(std::move(config)),
      store_(std::move(store)),
      clock_(clock),
      random_(random),
      core_(ToCoreConfig(config_)),
      log_(config_.durability) {
  DescribeMetrics();
}

Head::~Head() { Stop(); }

void Head::Start() {
  pipeline_ = std::make_unique<CommitPipeline>(
      store_.get(),
      [this](const std::vector<Change>& committed) {
        if (audit_) AuditPrivileged(*audit_, committed);
      },
      [this](Status st) { Post([this, st] { OnDurable(st); }); });
  tick_timer_ = std::make_unique<asio::steady_timer>(io_);
  Post([this] {
    FlushEdits();
    Tick();
  });
  thread_ = std::thread([this] {
    auto guard = asio::make_work_guard(io_);
    io_.run();
  });
  archive_thread_ = std::thread([this] {
    auto guard = asio::make_work_guard(archive_io_);
    archive_io_.run();
  });
}

void Head::Stop() {
  if (stopped_ || !thread_.joinable()) return;
  stopped_ = true;
  io_.stop();
  thread_.join();
  archive_io_.stop();  // a read under way finishes; its answer is not delivered
  archive_thread_.join();
  if (backup_thread_.joinable()) backup_thread_.join();  // its answer is not delivered
  pipeline_.reset();                                     // finishes an in-flight commit
}

bool Head::failed() const { return failed_.load(); }

void Head::Post(std::function<void()> fn) { asio::post(io_, std::move(fn)); }

void Head::Tick() {
  core_.Tick(clock_->Now());
  Drain();
  if (core_.TakeSnapshotWanted() && !failed_) {
    // Jobs wait to retire until the rows hold them as they ended.
    log_.MaybeSnapshot(core_, true, &next_edits_);
    if (!next_edits_.empty()) PostFlush();
  } else if (!inflight_ && next_changes_.empty() && next_edits_.empty() && !failed_) {
    log_.MaybeSnapshot(core_, false, &next_edits_);  // idle: a due snapshot delays no one
    if (!next_edits_.empty()) PostFlush();
  }
  if (config_.lease_renew_ms > 0 && !inflight_ && next_edits_.empty() && next_changes_.empty() &&
      !failed_ &&
      std::chrono::steady_clock::now() - commit_started_ >=
          std::chrono::milliseconds(config_.lease_renew_ms)) {
    inflight_ = true;  // an empty commit: the store renews the lease, nothing else
    commit_started_ = std::chrono::steady_clock::now();
    pipeline_->Submit({});
  }
  tick_timer_->expires_after(std::chrono::milliseconds(config_.tick_ms));
  tick_timer_->async_wait([this](const boost::system::error_code& ec) {
    if (!ec) Tick();
  });
}

// --- durability ---

void Head::Drain() {
  CoreOutput out = core_.TakeOutput();
  size_t retired = 0;
  for (const Change& c : out.changes) {
    if (const auto* r = std::get_if<JobsRetired>(&c.what)) retired += r->jobs.size();
  }
  // Many jobs just left memory: give the pages back, or the RSS stays that of the peak.
  if (retired >= 1000) malloc_trim(0);
  // A pass first, so that what it places rides in the same commit as what asked for it (a
  // submission's jobs and their placements: one commit to wait for, not two in a row).
  if (core_.schedule_wanted()) RequestSchedule();
  if (!out.changes.empty()) {
    log_.AppendRetirements(out.changes, core_.state(), &next_edits_);
    for (Change& c : out.changes) next_changes_.push_back(std::move(c));
    PostFlush();
  }
  bool first = nodes_to_answer_.empty();
  for (const std::string& n : out.nodes_to_notify) {
    if (parked_.count(n)) nodes_to_answer_.insert(n);
  }
  // Answer once per turn, after every change of this turn is in the desired state.
  if (first && !nodes_to_answer_.empty()) {
    Post([this] {
      auto names = std::move(nodes_to_answer_);
      nodes_to_answer_.clear();
      for (const std::string& n : names) AnswerParked(n);
    });
  }
}

void Head::AfterDurable(std::function<void()> ok, std::function<void(const Status&)> fail) {
  if (!next_edits_.empty() || !next_changes_.empty()) {
    next_callbacks_.push_back({std::move(ok), std::move(fail)});
  } else if (inflight_) {
    inflight_callbacks_.push_back({std::move(ok), std::move(fail)});
  } else {
    ok();
  }
}

template <typename T>
void Head::Reply(Callback<T> done, Result<T> result) {
  uint64_t revision = core_.revision();
  auto shared = std::make_shared<Callback<T>>(std::move(done));
  AfterDurable(
      [this, shared, revision, result = std::move(result)]() mutable {
        reply_revision_ = revision;
        (*shared)(std::move(result));
      },
      [shared](const Status& st) { (*shared)(StoreFailed(st)); });
}

void Head::PostFlush() {
  if (flush_posted_) return;
  flush_posted_ = true;
  Post([this] {
    flush_posted_ = false;
    FlushEdits();
  });
}

void Head::FlushEdits() {
  if (inflight_ || (next_edits_.empty() && next_changes_.empty()) || failed_) return;
  if (log_.SnapshotMayRideWith(core_.revision(), next_changes_.size())) {
    log_.MaybeSnapshot(core_, false, &next_edits_);
  }
  inflight_ = true;
  inflight_callbacks_ = std::move(next_callbacks_);
  next_callbacks_.clear();
  inflight_changes_ = std::make_shared<std::vector<Change>>(std::move(next_changes_));
  next_changes_.clear();
  CommitBatch batch{inflight_changes_, std::move(next_edits_)};
  next_edits_.clear();
  commit_started_ = std::chrono::steady_clock::now();
  pipeline_->Submit(std::move(batch));
}

void Head::OnDurable(Status st) {
  inflight_ = false;
  if (!st.ok()) {
    // Memory holds changes the store refused: answer nothing more, and let the process
    // restart from what is durable.
    failed_ = true;
    auto waiting = std::move(inflight_callbacks_);
    for (Waiting& w : next_callbacks_) waiting.push_back(std::move(w));
    inflight_callbacks_.clear();
    next_callbacks_.clear();
    next_edits_.clear();
    next_changes_.clear();
    for (auto& [name, p] : parked_) p.timer->cancel();
    for (auto& [name, p] : parked_) p.done(StoreFailed(st));
    parked_.clear();
    for (auto& [id, w] : watchers_) w.timer->cancel();
    for (auto& [id, w] : watchers_) w.done(StoreFailed(st));
    watchers_.clear();
    if (config_.on_store_failure) config_.on_store_failure(st);
    for (Waiting& w : waiting) w.fail(st);
    return;
  }
  auto committed = std::exchange(inflight_changes_, nullptr);
  if (committed || !inflight_callbacks_.empty()) {  // not a lease renewal
    metrics_.Observe(
        "corral_store_commit_duration_seconds", {},
        std::chrono::duration<double>(std::chrono::steady_clock::now() - commit_started_).count());
  }
  auto callbacks = std::move(inflight_callbacks_);
  inflight_callbacks_.clear();
  if (committed) {
    for (Change& c : *committed) {
      CountDurable(c);
      durable_revision_ = c.revision;
      recent_.push_back(std::move(c));
    }
  }
  while (recent_.size() > config_.event_buffer) recent_.pop_front();
  for (Waiting& w : callbacks) w.ok();
  AnswerWatchers();
  FlushEdits();
}

// --- the event stream ---

Head::Events Head::EventsFor(const Caller& who, uint64_t since, int32_t max) const {
  Events e;
  e.revision = durable_revision_;
  if (since >= durable_revision_) return e;
  // The oldest change kept must directly follow `since`, or the caller missed some.
  if (recent_.empty() || recent_.front().revision > since + 1) {
    e.reset = true;
    return e;
  }
  auto it = std::lower_bound(recent_.begin(), recent_.end(), since + 1,
                             [](const Change& c, uint64_t rev) { return c.revision < rev; });
  for (; it != recent_.end() && static_cast<int32_t>(e.changes.size()) < max; ++it) {
    e.changes.push_back(EventJson(*it, who));
  }
  return e;
}

void Head::AnswerWatchers() {
  for (auto it = watchers_.begin(); it != watchers_.end();) {
    if (it->second.since >= durable_revision_) {
      ++it;
      continue;
    }
    Watcher w = std::move(it->second);
    it = watchers_.erase(it);
    w.timer->cancel();
    reply_revision_ = durable_revision_;
    w.done(EventsFor(w.who, w.since, w.max));
  }
}

void Head::WatchEvents(std::string bearer, uint64_t since, int32_t max, DurationMs wait_ms,
                       Callback<Events> done) {
  Post([this, bearer = std::move(bearer), since, max, wait_ms, done = std::move(done)]() mutable {
    if (failed_) return done(StoreFailed(Unavailable("an earlier commit failed")));
    auto who = AuthenticateFor(bearer, clock_->Now(), /*for_agents=*/false);
    if (!who.ok()) return done(who.status());
    if (since < durable_revision_ || wait_ms <= 0) {
      reply_revision_ = durable_revision_;
      return done(EventsFor(*who, since, max));
    }
    uint64_t id = next_watch_++;
    Watcher& w = watchers_[id];
    w.who = *who;
    w.since = since;
    w.max = max;
    w.done = std::move(done);
    w.timer = std::make_unique<asio::steady_timer>(io_);
    w.timer->expires_after(std::chrono::milliseconds(wait_ms));
    w.timer->async_wait([this, id](const boost::system::error_code& ec) {
      auto it = watchers_.find(id);
      if (ec || it == watchers_.end()) return;
      Watcher w = std::move(it->second);
      watchers_.erase(it);
      reply_revision_ = durable_revision_;
      w.done(EventsFor(w.who, w.since, w.max));
    });
  });
}

// --- commands ---

template <typename T>
void Head::Command(std::string bearer, Callback<T> done,
                   std::function<Result<T>(const Caller&, TimeMs)> fn, bool for_agents) {
  Post([this, bearer = std::move(bearer), done = std::move(done), fn = std::move(fn),
        for_agents]() mutable {
    TimeMs now = clock_->Now();
    auto who = Admit(bearer, now, for_agents, done);
    if (!who) return;
    Result<T> r = fn(*who, now);
    Drain();
    Reply<T>(std::move(done), std::move(r));
  });
}

template <typename T>
std::optional<Caller> Head::Admit(const std::string& bearer, TimeMs now, bool for_agents,
                                  Callback<T>& done) {
  if (failed_) {
    done(StoreFailed(Unavailable("an earlier commit failed")));
    return std::nullopt;
  }
  auto who = AuthenticateFor(bearer, now, for_agents);
  if (!who.ok()) {
    Reply<T>(std::move(done), who.status());
    return std::nullopt;
  }
  return *who;
}

Result<Caller> Head::AuthenticateFor(const std::string& bearer, TimeMs now, bool for_agents) const {
  auto who = core_.Authenticate(bearer, now);
  if (who.ok() && !for_agents &&
      (who->kind == Caller::Kind::kNode || who->kind == Caller::Kind::kJoin)) {
    return PermissionDenied("an agent's credential only registers and syncs its node");
  }
  return who;
}

void Head::RequestSchedule() {
  if (schedule_posted_) return;
  schedule_posted_ = true;
  Post([this] {
    schedule_posted_ = false;
    if (failed_) return;
    auto t0 = std::chrono::steady_clock::now();
    core_.Schedule(clock_->Now());
    metrics_.Observe("corral_schedule_pass_duration_seconds", {},
                     std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    Drain();
  });
}

void Head::Submit(std::string bearer, JobSpec spec, std::string owner, std::string request_id,
                  Callback<Job> done) {
  Command<Job>(std::move(bearer), std::move(done),
               [this, spec = std::move(spec), owner = std::move(owner),
                request_id = std::move(request_id)](const Caller& by, TimeMs now) mutable {
                 return core_.Submit(by, std::move(spec), std::move(owner), now,
                                     std::move(request_id));
               });
}

void Head::Cancel(std::string bearer, JobId id, bool element_only, Callback<Job> done) {
  Command<Job>(std::move(bearer), std::move(done),
               [this, id, element_only](const Caller& by, TimeMs now) {
                 return core_.Cancel(by, id, now, element_only);
               });
}

void Head::ReportCheckpoint(std::string bearer, JobId id, Callback<Job> done) {
  Command<Job>(std::move(bearer), std::move(done), [this, id](const Caller& by, TimeMs now) {
    return core_.ReportCheckpoint(by, id, now);
  });
}

void Head::ReadRetired(std::function<Result<std::vector<Job>>()> read,
                       std::function<void(Result<std::vector<Job>>)> then) {
  asio::post(archive_io_, [this, read = std::move(read), then = std::move(then)]() mutable {
    auto jobs = std::make_shared<Result<std::vector<Job>>>(read());
    Post([jobs, then = std::move(then)] { then(std::move(*jobs)); });
  });
}

// A job by id; a retired one from the store. `for_logs`: only for those who may read its
// output.
void Head::GetJob(std::string bearer, JobId id, Callback<Job> done, bool for_logs) {
  Post([this, bearer = std::move(bearer), id, done = std::move(done), for_logs]() mutable {
    auto who = Admit(bearer, clock_->Now(), /*for_agents=*/false, done);
    if (!who) return;
    Result<Job> live = for_logs ? core_.GetJobForLogs(*who, id) : core_.GetJob(*who, id);
    if (live.ok() || !core_.RetiredState(id)) return Reply<Job>(std::move(done), std::move(live));
    ReadRetired([this, id] { return store_->ReadRetiredJobs({.id = id, .limit = 1}); },
                [this, by = *who, id, done = std::move(done), for_logs](auto jobs) mutable {
                  if (!jobs.ok()) return Reply<Job>(std::move(done), jobs.status());
                  if (jobs->empty())
                    return Reply<Job>(std::move(done), NotFound("no job " + std::to_string(id)));
                  Job& job = jobs->front();
                  Status may = for_logs ? core_.MayReadLogs(by, job) : Status::Ok();
                  if (!may.ok()) return Reply<Job>(std::move(done), may);
                  Reply<Job>(std::move(done), core_.JobAsSeenBy(by, std::move(job)));
                });
  });
}

void Head::GetJob(std::string bearer, JobId id, Callback<Job> done) {
  GetJob(std::move(bearer), id, std::move(done), false);
}

void Head::GetJobForLogs(std::string bearer, JobId id, Callback<Job> done) {
  GetJob(std::move(bearer), id, std::move(done), true);
}

void Head::Requeue(std::string bearer, JobId id, Callback<Job> done) {
  Command<Job>(std::move(bearer), std::move(done),
               [this, id](const Caller& by, TimeMs now) { return core_.Requeue(by, id, now); });
}

void Head::Signal(std::string bearer, JobId id, int32_t signal, HeadCore::SignalTarget to,
                  Callback<Job> done) {
  Command<Job>(std::move(bearer), std::move(done),
               [this, id, signal, to](const Caller& by, TimeMs now) {
                 return core_.Signal(by, id, signal, to, now);
               });
}

void Head::SetHold(std::string bearer, JobId id, bool hold, Callback<Job> done) {
  Command<Job>(std::move(bearer), std::move(done), [this, id, hold](const Caller& by, TimeMs now) {
    return core_.SetHold(by, id, hold, now);
  });
}

void Head::StartStep(std::string bearer, JobId id, StepRequest req, Callback<Step> done) {
  Command<Step>(std::move(bearer), std::move(done),
                [this, id, req = std::move(req)](const Caller& by, TimeMs now) mutable {
                  return core_.StartStep(by, id, std::move(req), now);
                });
}

void Head::GetStep(std::string bearer, JobId id, int32_t step, Callback<Step> done) {
  Command<Step>(std::move(bearer), std::move(done),
                [this, id, step](const Caller& by, TimeMs) { return core_.GetStep(by, id, step); });
}

bool Head::ReachesRetired(const JobFilter& f, TimeMs now) const {
  if (core_.state().retired.empty()) return false;
  if (!f.states.empty() && std::none_of(f.states.begin(), f.states.end(), IsTerminal)) {
    return false;
  }
  // Jobs that ended before now - retain_finished may have left memory.
  return config_.retain_finished_ms <= 0 || f.ended_since <= now - config_.retain_finished_ms;
}

void Head::ListJobs(std::string bearer, JobFilter f, Callback<std::vector<Job>> done) {
  Post([this, bearer = std::move(bearer), f = std::move(f), done = std::move(done)]() mutable {
    TimeMs now = clock_->Now();
    auto who = Admit(bearer, now, /*for_agents=*/false, done);
    if (!who) return;
    std::vector<Job> live = core_.ListJobs(*who, f);
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
    ReadRetired(std::move(read), [this, by = *who, limit = f.limit, live = std::move(live),
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
  });
}

void Head::Usage(std::string bearer, UsageBy group, DurationMs since_ms,
                 Callback<UsageReport> done) {
  Post([this, bearer = std::move(bearer), group, since_ms, done = std::move(done)]() mutable {
    TimeMs now = clock_->Now();
    auto who = Admit(bearer, now, /*for_agents=*/false, done);
    if (!who) return;
    if (Status ok = HeadCore::CheckUsage(*who, since_ms); !ok.ok()) {
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
  });
}

void Head::ListNodes(std::string bearer, Callback<std::vector<NodeView>> done) {
  Command<std::vector<NodeView>>(std::move(bearer), std::move(done), [this](const Caller&, TimeMs) {
    return Result<std::vector<NodeView>>(core_.ListNodes());
  });
}

void Head::GetNode(std::string bearer, std::string name, Callback<Node> done) {
  Command<Node>(
      std::move(bearer), std::move(done),
      [this, name = std::move(name)](const Caller&, TimeMs) { return core_.GetNode(name); });
}

void Head::SetDrain(std::string bearer, std::string name, bool drain, Callback<NodeView> done) {
  Command<NodeView>(std::move(bearer), std::move(done),
                    [this, name = std::move(name), drain](const Caller& by, TimeMs now) {
                      return core_.SetDrain(by, name, drain, now);
                    });
}

void Head::ListQueues(std::string bearer, Callback<std::vector<QueueView>> done) {
  Command<std::vector<QueueView>>(
      std::move(bearer), std::move(done),
      [this](const Caller&, TimeMs) { return Result<std::vector<QueueView>>(core_.ListQueues()); });
}

void Head::SetQueue(std::string bearer, QueueConfig q, Callback<QueueConfig> done) {
  Command<QueueConfig>(std::move(bearer), std::move(done),
                       [this, q = std::move(q)](const Caller& by, TimeMs now) {
                         return core_.SetQueue(by, q, now);
                       });
}

void Head::CreateToken(std::string bearer, TokenRequest req, Callback<NewToken> done) {
  Command<NewToken>(std::move(bearer), std::move(done),
                    [this, req = std::move(req)](const Caller& by, TimeMs now) -> Result<NewToken> {
                      std::string secret = random_->Secret();
                      auto c = core_.IssueToken(by, req, secret, now);
                      if (!c.ok()) return c.status();
                      return NewToken{*c, secret};
                    });
}

void Head::RevokeToken(std::string bearer, std::string id, Callback<Credential> done) {
  Command<Credential>(std::move(bearer), std::move(done),
                      [this, id = std::move(id)](const Caller& by, TimeMs now) {
                        return core_.RevokeToken(by, id, now);
                      });
}

void Head::ListTokens(std::string bearer, Callback<std::vector<Credential>> done) {
  Command<std::vector<Credential>>(std::move(bearer), std::move(done),
                                   [this](const Caller& by, TimeMs) {
                                     return Result<std::vector<Credential>>(core_.ListTokens(by));
                                   });
}

void Head::Backup(std::string bearer, std::string path, Callback<store::BackupInfo> done) {
  Post([this, bearer = std::move(bearer), path = std::move(path),
        done = std::move(done)]() mutable {
    TimeMs now = clock_->Now();
    auto who = AuthenticateFor(bearer, now, false);
    if (who.ok() && (who->kind != Caller::Kind::kUser || who->role != Role::kAdmin)) {
      who = PermissionDenied("only an admin may back up the store");
    }
    if (!who.ok()) return Reply<store::BackupInfo>(std::move(done), who.status());
    if (backup_running_) {
      return Reply<store::BackupInfo>(
          std::move(done),
          FailedPrecondition("a backup is already running; try again when it ends"));
    }
    backup_running_ = true;
    Audit(Json{{"at", now},
               {"who", who->name},
               {"role", RoleName(who->role)},
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
  });
}

void Head::Register(std::string bearer, RegisterRequest req, Callback<RegisterResponse> done) {
  Command<RegisterResponse>(
      std::move(bearer), std::move(done),
      [this, req = std::move(req)](const Caller& by, TimeMs now) mutable {
        return core_.Register(by, std::move(req), random_->Secret(), now);
      },
      /*for_agents=*/true);
}

void Head::Sync(std::string bearer, SyncRequest req, Callback<SyncResponse> done) {
  Post([this, bearer = std::move(bearer), req = std::move(req), done = std::move(done)]() mutable {
    if (failed_) return done(StoreFailed(Unavailable("an earlier commit failed")));
    TimeMs now = clock_->Now();
    auto who = core_.Authenticate(bearer, now);
    Result<bool> known = who.ok() ? core_.Report(*who, req, now) : Result<bool>(who.status());
    Drain();
    if (!known.ok()) return Reply<SyncResponse>(std::move(done), known.status());
    if (!*known) {
      SyncResponse r;
      r.head_epoch = core_.state().epoch;
      r.reregister = true;
      return Reply<SyncResponse>(std::move(done), r);
    }
    // A newer call supersedes a held one.
    if (auto p = parked_.find(req.node); p != parked_.end()) AnswerParked(req.node);
    const uint64_t from = req.deltas ? req.desired_version : 0;
    if (req.desired_version != core_.NodeVersion(req.node) || req.wait_ms <= 0) {
      return Reply<SyncResponse>(std::move(done), core_.AnswerFor(req.node, from));
    }
    // Liveness counts what the head hears, so a held call must come back well inside the
    // unreachable timeout.
    DurationMs hold = std::min<DurationMs>(
        {req.wait_ms, config_.max_sync_hold_ms, config_.unreachable_after_ms / 3});
    Parked& parked = parked_[req.node];
    parked.done = std::move(done);
    parked.from = from;
    parked.timer = std::make_unique<asio::steady_timer>(io_);
    parked.timer->expires_after(std::chrono::milliseconds(std::max<DurationMs>(hold, 1)));
    parked.timer->async_wait([this, name = req.node](const boost::system::error_code& ec) {
      if (!ec) AnswerParked(name);
    });
  });
}

void Head::AnswerParked(const std::string& node) {
  auto p = parked_.find(node);
  if (p == parked_.end()) return;
  Parked parked = std::move(p->second);
  parked_.erase(p);
  parked.timer->cancel();
  // The desired state is taken now and sent once everything it reflects is durable.
  Reply<SyncResponse>(std::move(parked.done), core_.AnswerFor(node, parked.from));
}

// --- metrics ---

namespace {

// Bounded label values for free-text reasons (Prometheus: no unbounded labels).
std::string PreemptClass(const std::string& reason) {
  if (reason.find("attained less service") != std::string::npos) return "las";
  if (reason.find("reclaims its quota") != std::string::npos) return "quota";
  if (reason.find("of priority") != std::string::npos) return "priority";
  return "other";
}

std::string WaitClass(const std::string& reason) {
  if (reason.empty()) return "new";
  if (reason.find("reserved") != std::string::npos) return "reserved";
  if (reason.find("even when idle") != std::string::npos) return "no_fitting_node";
  if (reason.find("preempt") != std::string::npos) return "preempting";
  if (reason.find("limit") != std::string::npos) return "queue_limit";
  if (reason.find("free GPUs") != std::string::npos) return "resources";
  return "other";
}

}  // namespace

void Head::DescribeMetrics() {
  using T = MetricsRegistry::Type;
  auto& m = metrics_;
  m.Describe("corral_build_info", T::kGauge, "Always 1; the labels say which Corral this is.");
  m.Set("corral_build_info", {{"version", Version()}}, 1);
  m.Describe("corral_head_epoch", T::kGauge, "Leadership epoch of this head.");
  m.Describe("corral_state_revision", T::kGauge, "Revision of the last durable change.");
  m.Describe("corral_jobs", T::kGauge, "Jobs in memory by state.");
  m.Describe("corral_jobs_retired", T::kGauge,
             "Jobs that ended longer ago than --retain-finished: out of memory, in the store.");
  m.Describe("corral_pending_jobs", T::kGauge, "Pending jobs by queue and reason.");
  m.Describe("corral_queue_gpus_allocated", T::kGauge, "GPUs held by the runs of each queue.");
  m.Describe("corral_queue_gpu_quota", T::kGauge, "Guaranteed GPUs of each queue.");
  m.Describe("corral_nodes", T::kGauge, "Nodes by state.");
  m.Describe("corral_idle_runs", T::kGauge,
             "Running runs whose GPUs have all stayed under the idle threshold long enough.");
  m.Describe("corral_gpus", T::kGauge, "GPUs by state (allocated, idle, unavailable).");
  m.Describe("corral_queue_gpu_seconds_total", T::kCounter,
             "GPU-seconds used by each queue's finished runs.");
  m.Describe("corral_jobs_submitted_total", T::kCounter, "Jobs accepted.");
  m.Describe("corral_jobs_finished_total", T::kCounter, "Jobs ended, by final state.");
  m.Describe("corral_preemptions_total", T::kCounter,
             "Runs asked to stop by preemption, by reason.");
  m.Describe("corral_schedule_pass_duration_seconds", T::kHistogram, "Scheduling pass duration.",
             MetricsRegistry::LatencyBuckets());
  m.Describe("corral_job_wait_seconds", T::kHistogram, "Submit-to-start wait of first runs.",
             MetricsRegistry::WaitBuckets());
  m.Describe("corral_store_commit_duration_seconds", T::kHistogram,
             "Group commit duration, hand-off to durable.", MetricsRegistry::LatencyBuckets());
  m.Describe("corral_api_request_duration_seconds", T::kHistogram,
             "API request duration by route and HTTP code.", MetricsRegistry::LatencyBuckets());
}

void Head::CountDurable(const Change& c) {
  const ClusterState& s = core_.state();
  if (std::holds_alternative<JobSubmitted>(c.what)) {
    metrics_.Add("corral_jobs_submitted_total", {}, 1);
  } else if (const auto* a = std::get_if<ArraySubmitted>(&c.what)) {
    metrics_.Add("corral_jobs_submitted_total", {}, static_cast<double>(a->size()));
  } else if (const auto* e = std::get_if<RunStarted>(&c.what); e && e->attempt == 1) {
    const Job& job = s.jobs.at(e->job);
    metrics_.Observe("corral_job_wait_seconds", {{"queue", job.spec.queue}},
                     std::max<double>(0, (e->started_at - job.submitted_at) / 1000.0));
  } else if (const auto* e = std::get_if<StopRequested>(&c.what);
             e && e->reason.rfind("preempted", 0) == 0) {
    metrics_.Add("corral_preemptions_total", {{"reason", PreemptClass(e->reason)}}, 1);
  } else if (const auto* e = std::get_if<RunEnded>(&c.what)) {
    const Job& job = s.jobs.at(e->job);
    const Run& run = job.runs[e->attempt - 1];
    if (run.started_at > 0 && run.ended_at > run.started_at) {
      double gpus = job.spec.replicas * job.spec.per_replica.gpu_milli / double(kGpuMilli);
      metrics_.Add("corral_queue_gpu_seconds_total", {{"queue", job.spec.queue}},
                   gpus * (run.ended_at - run.started_at) / 1000.0);
    }
    if (IsTerminal(e->job_state)) {
      metrics_.Add("corral_jobs_finished_total", {{"state", JobStateName(e->job_state)}}, 1);
    }
  } else if (const auto* e = std::get_if<JobEnded>(&c.what)) {
    metrics_.Add("corral_jobs_finished_total", {{"state", JobStateName(e->state)}}, 1);
  }
}

void Head::RenderMetrics(Callback<std::string> done) {
  Post([this, done = std::move(done)] {
    const ClusterState& s = core_.state();
    auto& m = metrics_;
    for (const char* g : {"corral_jobs", "corral_pending_jobs", "corral_queue_gpus_allocated",
                          "corral_queue_gpu_quota", "corral_nodes", "corral_gpus"}) {
      m.Clear(g);
    }
    m.Set("corral_head_epoch", {}, static_cast<double>(s.epoch));
    m.Set("corral_idle_runs", {}, static_cast<double>(core_.idle_runs().size()));
    m.Set("corral_jobs_retired", {}, static_cast<double>(s.retired.size()));
    m.Set("corral_state_revision", {}, static_cast<double>(durable_revision_));
    std::map<std::string, int64_t> by_state;
    std::map<std::pair<std::string, std::string>, int64_t> pending;
    for (const auto& [id, job] : s.jobs) {
      ++by_state[JobStateName(job.state)];
      if (job.state == JobState::kPending) {
        auto r = core_.pending_reasons().find(id);
        ++pending[{job.spec.queue, WaitClass(r == core_.pending_reasons().end() ? "" : r->second)}];
      }
    }
    for (JobState st : {JobState::kPending, JobState::kScheduled, JobState::kRunning,
                        JobState::kSucceeded, JobState::kFailed, JobState::kCancelled}) {
      m.Set("corral_jobs", {{"state", JobStateName(st)}}, by_state[JobStateName(st)]);
    }
    for (const auto& [key, n] : pending) {
      m.Set("corral_pending_jobs", {{"queue", key.first}, {"reason", key.second}}, n);
    }
    std::map<std::string, double> allocated;
    int64_t gpus_allocated = 0;
    for (JobId id : core_.active_jobs()) {
      const Job& job = s.jobs.at(id);
      for (const ReplicaPlacement& p : job.CurrentRun()->placement) {
        allocated[job.spec.queue] += p.gpus.size();
        gpus_allocated += p.gpus.size();
      }
    }
    for (const auto& [name, q] : s.queues) {
      m.Set("corral_queue_gpu_quota", {{"queue", name}}, q.quota_gpus);
      m.Set("corral_queue_gpus_allocated", {{"queue", name}}, allocated[name]);
    }
    std::map<std::string, int64_t> nodes;
    int64_t usable = 0, unusable = 0;
    for (const auto& [name, node] : s.nodes) {
      // An unhealthy ready node is counted as unhealthy: it takes no new runs.
      ++nodes[node.state == NodeState::kReady && !node.unhealthy.empty()
                  ? "unhealthy"
                  : NodeStateName(node.state)];
      bool ok = node.state == NodeState::kReady || node.state == NodeState::kDraining;
      for (const Gpu& g : node.gpus) (ok && g.healthy ? usable : unusable) += 1;
    }
    for (NodeState st : {NodeState::kReady, NodeState::kDraining, NodeState::kDrained,
                         NodeState::kUnreachable, NodeState::kDown}) {
      m.Set("corral_nodes", {{"state", NodeStateName(st)}}, nodes[NodeStateName(st)]);
    }
    m.Set("corral_nodes", {{"state", "unhealthy"}}, nodes["unhealthy"]);
    m.Set("corral_gpus", {{"state", "allocated"}}, gpus_allocated);
    m.Set("corral_gpus", {{"state", "idle"}}, std::max<int64_t>(0, usable - gpus_allocated));
    m.Set("corral_gpus", {{"state", "unavailable"}}, unusable);
    done(m.Render());
  });
}

}  // namespace corral::head
