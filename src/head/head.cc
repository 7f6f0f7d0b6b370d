// The head's shell: the state-machine thread, the commit pipeline, held syncs and event
// watchers. Commands enter through Run (head_commands.cc); opening and recovery are in
// head_open.cc, metrics in head_metrics.cc.
#include "head/head.h"

#include <malloc.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <future>

#include "core/relay_grant.h"
#include "head/head_internal.h"

namespace corral::head {

namespace asio = boost::asio;

namespace {

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

Status StoreFailed(const Status& st) {
  return Unavailable("the head's store failed a commit (" + st.message() +
                     "); nothing of this request is durable; the head must restart");
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
    if (!config_.driven) Tick();
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
  rdzv_.reset();       // the stores stay for a head started again (rdzv_stores.h)
  archive_io_.stop();  // a read under way finishes; its answer is not delivered
  archive_thread_.join();
  if (backup_thread_.joinable()) backup_thread_.join();  // its answer is not delivered
  pipeline_.reset();                                     // finishes an in-flight commit
}

bool Head::failed() const { return failed_.load(); }

void Head::Post(std::function<void()> fn) { asio::post(io_, std::move(fn)); }

void Head::Tick() {
  core_.Tick(clock_->Now());
  if (TimeMs now = clock_->Now(); cluster_series_.Due(now)) {
    cluster_series_.Add(SampleCluster(core_.ListNodes(now), core_.ListQueues(), now));
  }
  if (rdzv_) rdzv_->Reconcile(core_.RendezvousWanted());
  if (config_.estimate_interval_ms > 0) {
    TimeMs now = clock_->Now();
    if (now - last_estimate_at_ >= config_.estimate_interval_ms) {
      // After the tick's pass: the estimates are then those of the jobs it leaves waiting.
      if (core_.schedule_wanted()) RunPass();
      core_.EstimateStarts(now);
      last_estimate_at_ = now;
    }
  }
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
  if (config_.driven) return;  // the driver ticks (TickNow)
  tick_timer_->expires_after(std::chrono::milliseconds(config_.tick_ms));
  tick_timer_->async_wait([this](const boost::system::error_code& ec) {
    if (!ec) Tick();
  });
}

// --- durability ---

void Head::Drain() {
  CoreOutput out = core_.TakeOutput();
  NoteCredentials(out.changes);
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
      if (config_.on_job_notice) {
        if (auto notice = NoticeFor(c, core_.state())) config_.on_job_notice(std::move(*notice));
      }
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

Events Head::EventsFor(const Caller& who, uint64_t since, int32_t max) const {
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
  for (; it != recent_.end() && static_cast<int32_t>(e.events.size()) < max; ++it) {
    e.events.push_back(EventJson(*it, who));
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

void Head::Execute(const Caller& by, TimeMs, GetServiceHistory command,
                   Callback<std::map<std::string, ServiceHistory>> done) {
  std::set<std::string> visible;
  for (const std::string& name : command.names) {
    if (core_.GetService(by, name).ok()) visible.insert(name);
  }
  Reply<std::map<std::string, ServiceHistory>>(std::move(done),
                                               ServiceHistories(recent_, visible, command.max));
}

void Head::Execute(const Caller& by, TimeMs, WatchEvents command, Callback<Events> done) {
  const uint64_t since = command.since;
  if (since < durable_revision_ || command.wait_ms <= 0) {
    reply_revision_ = durable_revision_;
    return done(EventsFor(by, since, command.max));
  }
  uint64_t id = next_watch_++;
  Watcher& w = watchers_[id];
  w.who = by;
  w.since = since;
  w.max = command.max;
  w.done = std::move(done);
  w.timer = std::make_unique<asio::steady_timer>(io_);
  w.timer->expires_after(std::chrono::milliseconds(command.wait_ms));
  w.timer->async_wait([this, id](const boost::system::error_code& ec) {
    auto it = watchers_.find(id);
    if (ec || it == watchers_.end()) return;
    Watcher w = std::move(it->second);
    watchers_.erase(it);
    reply_revision_ = durable_revision_;
    w.done(EventsFor(w.who, w.since, w.max));
  });
}

// --- credentials ---

void Head::NoteCredentials(const std::vector<Change>& changes) {
  std::lock_guard lock(credentials_mu_);
  for (const Change& c : changes) {
    const Credential* added = nullptr;
    std::string key;
    if (const auto* t = std::get_if<TokenIssued>(&c.what)) {
      added = &t->credential;
      key = t->credential.who.kind == Caller::Kind::kNode ? "node/" + t->credential.who.name
                                                          : t->credential.id;
    } else if (const auto* n = std::get_if<NodeRegistered>(&c.what)) {
      added = &n->credential;
      key = "node/" + n->node.name;  // replaces the node's earlier credential
    } else if (const auto* r = std::get_if<TokenRevoked>(&c.what)) {
      key = r->id;
    } else if (const auto* gone = std::get_if<NodeRemoved>(&c.what)) {
      key = "node/" + gone->node;  // its credential goes with it
    } else {
      continue;
    }
    if (auto old = credential_of_.find(key); old != credential_of_.end()) {
      credential_expiry_.erase(old->second);
      credential_of_.erase(old);
    }
    if (added) {
      credential_expiry_[added->hash] = added->expires_at;
      credential_of_[key] = added->hash;
    }
  }
}

bool Head::IsCurrentCredential(const std::string& bearer) const {
  if (bearer.empty()) return false;
  std::string hash = Sha256Hex(bearer);
  std::lock_guard lock(credentials_mu_);
  auto it = credential_expiry_.find(hash);
  return it != credential_expiry_.end() && (it->second == 0 || it->second > clock_->Now());
}

Result<std::string> Head::RelayGrantFor(const std::string& node, const std::string& run) const {
  std::string key;
  {
    std::lock_guard lock(credentials_mu_);
    auto it = credential_of_.find("node/" + node);
    if (it == credential_of_.end()) {
      return FailedPrecondition("node " + node +
                                " holds no credential (it has not registered with this cluster, "
                                "or it was removed)");
    }
    key = it->second;  // == NodeGrantKey(the credential)
  }
  // The agent checks the expiry against its wall clock: the wall clock here too, never the
  // head's own (virtual in driven tests).
  return SignRelayGrant(key, RelayGrant{node, run, SystemClock().Now() + kRelayGrantLifetimeMs});
}

// --- commands ---

Result<Caller> Head::AuthenticateFor(const Presented& presented, TimeMs now,
                                     bool for_agents) const {
  // A forwarded caller is a Unix user a node's kernel named, taken only from a node that is
  // registered now (a removed node's credential is gone from the table).
  if (presented.vouching_node) {
    auto node = core_.Authenticate(*presented.vouching_node, now);
    if (!node.ok()) {
      return Status(node.status().code(),
                    "the forwarding node's credential: " + node.status().message());
    }
    if (node->kind != Caller::Kind::kNode) {
      return PermissionDenied("a forwarded Unix user is taken only from a node's credential");
    }
  }
  // A local caller is a user the kernel named: never an agent, and no token is looked up.
  if (presented.local) {
    if (for_agents && presented.local->ok()) {
      return PermissionDenied(
          "registering and syncing a node takes its credential, not a Unix user");
    }
    return *presented.local;
  }
  auto who = core_.Authenticate(presented.bearer, now);
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
    RunPass();
  });
}

void Head::RunPass() {
  if (failed_) return;
  auto t0 = std::chrono::steady_clock::now();
  core_.Schedule(clock_->Now());
  metrics_.Observe("corral_schedule_pass_duration_seconds", {},
                   std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  Drain();
}

void Head::Settle() {
  // Shared: the state machine may still be inside set_value when this thread returns.
  auto settled = std::make_shared<std::promise<void>>();
  std::future<void> done = settled->get_future();
  // Checked on the state machine: work posted meanwhile (a pass, a flush, parked answers) is
  // waited for behind it on the queue; a commit through AfterDurable, whose callbacks run in
  // order, so after the answers that waited for the same commit.
  std::function<void()> check = [this, &check, settled] {
    if (flush_posted_ || schedule_posted_ || !nodes_to_answer_.empty()) return Post(check);
    if (inflight_ || !next_changes_.empty() || !next_edits_.empty()) {
      return AfterDurable(check, [settled](const Status&) { settled->set_value(); });
    }
    settled->set_value();
  };
  Post(check);
  done.wait();
}

void Head::Execute(const Caller& by, TimeMs now, SyncAgent command, Callback<SyncResponse> done) {
  const SyncRequest& req = command.request;
  Result<bool> known = core_.Report(by, req, now);
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
      {req.wait_ms, config_.max_sync_hold_ms, config_.core.unreachable_after_ms / 3});
  Parked& parked = parked_[req.node];
  parked.done = std::move(done);
  parked.from = from;
  parked.timer = std::make_unique<asio::steady_timer>(io_);
  parked.timer->expires_after(std::chrono::milliseconds(std::max<DurationMs>(hold, 1)));
  parked.timer->async_wait([this, name = req.node](const boost::system::error_code& ec) {
    if (!ec) AnswerParked(name);
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

}  // namespace corral::head
