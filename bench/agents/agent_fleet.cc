#include "agents/agent_fleet.h"

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdio>
#include <deque>

#include "agents/emulated_agent.h"
#include "agents/keepalive_conn.h"
#include "core/codec.h"

namespace corral::bench {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using Steady = std::chrono::steady_clock;

TimeMs WallMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

double MsSince(Steady::time_point t0) {
  return std::chrono::duration<double, std::milli>(Steady::now() - t0).count();
}

constexpr auto kRetryAfter = 200ms;

}  // namespace

struct AgentFleet::Slot {
  Slot(Shard* s, std::string name, const FleetConfig& c, asio::io_context& ioc)
      : shard(s),
        agent(std::move(name), c.gpus_per_agent, c.runtime_ms, c.deltas, c.usage_every_ms),
        poll(std::make_shared<KeepAliveConn>(ioc, c.head, c.host_header)),
        exit_timer(ioc),
        retry_timer(ioc) {}
  Shard* shard;
  EmulatedAgent agent;
  std::string token;                      // the node credential from registration
  std::shared_ptr<KeepAliveConn> poll;    // register, then the long-poll loop
  std::shared_ptr<KeepAliveConn> urgent;  // exit reports while the long-poll is held (lazy)
  asio::steady_timer exit_timer;          // runtime_ms > 0: the next run's end
  asio::steady_timer retry_timer;
};

struct AgentFleet::Shard {
  explicit Shard(const FleetConfig& c) : config(c) {}

  void Register(Slot* s);
  void Sync(Slot* s, bool urgent);
  void OnSyncAnswer(Slot* s, bool urgent, const SyncRequest& sent, Result<net::HttpResponse> r,
                    Steady::time_point t0);
  void ArmExitTimer(Slot* s);
  void ReportNowIfNeeded(Slot* s);
  void RetryLater(Slot* s, const std::string& what, const std::string& why);
  void RegisterNext();

  const FleetConfig& config;
  asio::io_context ioc{1};  // destroyed last: handlers still queued die with it
  std::vector<std::unique_ptr<Slot>> slots;
  std::deque<Slot*> to_register;
  int registering = 0;
  int max_registering = 1;
  LatencyStats sync_rtt;      // this thread's only
  LatencyStats register_rtt;  // this thread's only
  std::atomic<int64_t> registered{0}, runs_started{0}, runs_done{0}, syncs{0}, errors{0};
  std::atomic<int64_t> answers{0}, answer_bytes{0};
  std::mutex error_mu;
  std::string first_error;  // GUARDED_BY(error_mu)
};

void AgentFleet::Shard::RetryLater(Slot* s, const std::string& what, const std::string& why) {
  ++errors;
  {
    std::lock_guard lock(error_mu);
    if (first_error.empty()) first_error = s->agent.name() + " " + what + ": " + why;
  }
  s->retry_timer.expires_after(kRetryAfter);
  s->retry_timer.async_wait([this, s](const boost::system::error_code& ec) {
    if (ec) return;
    if (!s->agent.registered()) return Register(s);
    Sync(s, false);
  });
}

void AgentFleet::Shard::RegisterNext() {
  while (registering < max_registering && !to_register.empty()) {
    Slot* s = to_register.front();
    to_register.pop_front();
    ++registering;
    Register(s);
  }
}

void AgentFleet::Shard::Register(Slot* s) {
  auto t0 = Steady::now();
  s->poll->Post(
      "/v1/agent/register", config.join_token, ToJson(s->agent.MakeRegisterRequest()).dump(), 30s,
      [this, s, t0](Result<net::HttpResponse> r) {
        if (!r.ok()) return RetryLater(s, "register", r.status().ToString());
        if (r->status != 200) {
          return RetryLater(s, "register", "HTTP " + std::to_string(r->status) + ": " + r->body);
        }
        auto resp = RegisterResponseFromJson(Json::parse(r->body, nullptr, false));
        if (!resp.ok()) return RetryLater(s, "register", resp.status().ToString());
        register_rtt.Add(MsSince(t0));
        bool first = s->token.empty();
        s->token = resp->node_token;
        s->agent.OnRegistered(*resp);
        if (first) {
          ++registered;
          --registering;
          RegisterNext();
        }
        Sync(s, false);
      });
}

void AgentFleet::Shard::Sync(Slot* s, bool urgent) {
  auto& conn = urgent ? s->urgent : s->poll;
  if (!conn) conn = std::make_shared<KeepAliveConn>(ioc, config.head, config.host_header);
  SyncRequest req = s->agent.MakeSync(config.sync_wait_ms, WallMs());
  if (urgent) req.wait_ms = 0;
  auto t0 = Steady::now();
  ++syncs;
  conn->Post("/v1/agent/sync", s->token, ToJson(req).dump(),
             std::chrono::milliseconds(req.wait_ms) + 10s,
             [this, s, urgent, req, t0](Result<net::HttpResponse> r) {
               OnSyncAnswer(s, urgent, req, std::move(r), t0);
             });
}

void AgentFleet::Shard::OnSyncAnswer(Slot* s, bool urgent, const SyncRequest& sent,
                                     Result<net::HttpResponse> r, Steady::time_point t0) {
  if (!r.ok() || r->status != 200) {
    std::string why =
        r.ok() ? "HTTP " + std::to_string(r->status) + ": " + r->body : r.status().ToString();
    if (urgent) {  // the long-poll carries the report instead
      ++errors;
      return;
    }
    return RetryLater(s, "sync", why);
  }
  if (sent.wait_ms == 0) sync_rtt.Add(MsSince(t0));
  ++answers;
  answer_bytes += static_cast<int64_t>(r->body.size());
  auto resp = SyncResponseFromJson(Json::parse(r->body, nullptr, false));
  if (!resp.ok()) {
    if (urgent) return;
    return RetryLater(s, "sync", resp.status().ToString());
  }
  int64_t done_before = s->agent.forgotten();
  runs_started += s->agent.Apply(*resp, WallMs());
  runs_done += s->agent.forgotten() - done_before;
  if (!s->agent.registered()) {  // the head asks for a new registration
    if (!urgent) Register(s);
    return;
  }
  ArmExitTimer(s);
  if (!urgent) return Sync(s, false);
  ReportNowIfNeeded(s);
}

void AgentFleet::Shard::ArmExitTimer(Slot* s) {
  TimeMs next = s->agent.NextExitAt();
  if (next == 0) return;
  s->exit_timer.expires_after(std::chrono::milliseconds(std::max<TimeMs>(0, next - WallMs())));
  s->exit_timer.async_wait([this, s](const boost::system::error_code& ec) {
    if (ec) return;
    s->agent.FinishDue(WallMs());
    ArmExitTimer(s);
    ReportNowIfNeeded(s);
  });
}

// An exit happened while the long-poll is held: report it on a second connection at once (the
// real agent's reporter thread does the same); the head answers the held call too.
void AgentFleet::Shard::ReportNowIfNeeded(Slot* s) {
  if (!s->agent.unreported() || !s->poll->busy()) return;
  if (s->urgent && s->urgent->busy()) return;
  Sync(s, true);
}

AgentFleet::AgentFleet(FleetConfig config) : config_(std::move(config)) {
  int threads = std::max(1, config_.threads);
  for (int t = 0; t < threads; ++t) {
    auto shard = std::make_unique<Shard>(config_);
    shard->max_registering = std::max(1, config_.max_registering / threads);
    shards_.push_back(std::move(shard));
  }
  for (int i = 0; i < config_.agents; ++i) {
    Shard& shard = *shards_[i % threads];
    char name[64];
    std::snprintf(name, sizeof name, "%s-%05d", config_.name_prefix.c_str(), i);
    shard.slots.push_back(std::make_unique<Slot>(&shard, name, config_, shard.ioc));
    shard.to_register.push_back(shard.slots.back().get());
  }
}

AgentFleet::~AgentFleet() { Stop(); }

void AgentFleet::Start() {
  for (auto& shard : shards_) {
    Shard* s = shard.get();
    asio::post(s->ioc, [s] { s->RegisterNext(); });
    threads_.emplace_back([s] {
      auto guard = asio::make_work_guard(s->ioc);
      s->ioc.run();
    });
  }
}

void AgentFleet::Stop() {
  if (stopped_) return;
  stopped_ = true;
  for (auto& shard : shards_) shard->ioc.stop();
  for (auto& t : threads_) t.join();
}

FleetCounters AgentFleet::counters() const {
  FleetCounters c;
  for (const auto& s : shards_) {
    c.registered += s->registered;
    c.runs_started += s->runs_started;
    c.runs_done += s->runs_done;
    c.syncs += s->syncs;
    c.answers += s->answers;
    c.answer_bytes += s->answer_bytes;
    c.errors += s->errors;
  }
  return c;
}

std::string AgentFleet::first_error() const {
  for (const auto& s : shards_) {
    std::lock_guard lock(s->error_mu);
    if (!s->first_error.empty()) return s->first_error;
  }
  return "";
}

LatencyStats AgentFleet::SyncRoundTrips() const {
  LatencyStats all;
  for (const auto& s : shards_) all.Merge(s->sync_rtt);
  return all;
}

LatencyStats AgentFleet::RegisterRoundTrips() const {
  LatencyStats all;
  for (const auto& s : shards_) all.Merge(s->register_rtt);
  return all;
}

void AgentFleet::ResetStats() {
  for (auto& shard : shards_) {
    Shard* s = shard.get();
    asio::post(s->ioc, [s] { s->sync_rtt = LatencyStats(); });
  }
}

}  // namespace corral::bench
