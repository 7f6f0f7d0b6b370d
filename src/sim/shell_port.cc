#include "sim/shell_port.h"

#include <atomic>
#include <future>
#include <limits>
#include <map>
#include <mutex>
#include <set>

#include "head/change_tail.h"
#include "head/head.h"

namespace corral::sim {

namespace {

// The loop's time, read by the head's state machine: set only between two calls, while the
// head is settled.
class VirtualClock final : public Clock {
 public:
  TimeMs Now() const override { return now_.load(); }
  void Set(TimeMs now) { now_.store(now); }

 private:
  std::atomic<TimeMs> now_{0};
};

class ShellPort final : public HeadPort {
 public:
  ~ShellPort() override {
    if (head_) head_->Stop();
  }

  Status Open(head::CoreConfig config, TimeMs now, const std::string& state_dir,
              DurationMs sync_hold_ms) {
    hold_ms_ = sync_hold_ms;
    clock_.Set(now);
    head::HeadConfig c;
    c.state_dir = state_dir;
    c.core = std::move(config);
    c.driven = true;
    Result<std::unique_ptr<head::Head>> head = head::Head::Open(std::move(c), &clock_);
    if (!head.ok()) return head.status();
    head_ = std::move(*head);
    head_->Start();
    head_->Settle();
    // A connection of its own: the changes as the store holds them once committed.
    Result<std::unique_ptr<store::Store>> reader = store::OpenSqliteStore(state_dir + "/corral.db");
    if (!reader.ok()) return reader.status();
    reader_ = std::move(*reader);
    (void)TakeOutput();  // the leadership's start and the bootstrap tokens
    return Status::Ok();
  }

  Status SetQueue(const QueueConfig& queue, TimeMs now) override {
    return Call(head_->tokens().admin, head::SetQueue{queue}, now).status();
  }

  Status CreateReservation(const NodeReservationSpec& reservation, TimeMs now) override {
    return Call(head_->tokens().admin, head::CreateReservation{reservation}, now).status();
  }

  Status AddDataset(const Dataset& dataset, TimeMs now) override {
    return Call(head_->tokens().admin, head::AddDataset{dataset}, now).status();
  }

  Result<Job> Submit(JobSpec spec, const std::string& owner, TimeMs now) override {
    return Call(head_->tokens().admin, head::SubmitJob{std::move(spec), owner, ""}, now);
  }

  uint64_t Register(const RegisterRequest& request, TimeMs now) override {
    Result<RegisterResponse> r = Call(head_->tokens().join, head::RegisterAgent{request}, now);
    CORRAL_CHECK(r.ok(), "registering " + request.name + ": " + r.status().message());
    node_tokens_[request.name] = r->node_token;
    return r->agent_epoch;
  }

  void Report(const SyncRequest& request, TimeMs now) override { Sync(request, hold_ms_, now); }
  void AwaitOrders(const SyncRequest& request, TimeMs now) override {
    Sync(request, hold_ms_, now);
  }

  SyncResponse OrdersFor(const std::string& node, uint64_t from) override {
    if (from != 0) {
      std::lock_guard lock(mu_);
      if (auto it = orders_.find(node); it != orders_.end()) {
        SyncResponse r = std::move(it->second);
        orders_.erase(it);
        return r;
      }
    }
    // All of them: the agent's last sync again, answered in full at once.
    SyncRequest full = last_sync_.at(node);
    full.deltas = false;
    Sync(full, 0, clock_.Now());
    std::lock_guard lock(mu_);
    auto it = orders_.find(node);
    CORRAL_CHECK(it != orders_.end(), "the head did not answer " + node + "'s sync");
    SyncResponse r = std::move(it->second);
    orders_.erase(it);
    return r;
  }

  void Tick(TimeMs now) override {
    clock_.Set(now);
    head_->TickNow();
    head_->Settle();
  }

  void Schedule(TimeMs now) override {
    clock_.Set(now);
    head_->PassNow();
    head_->Settle();
  }

  void EstimateStarts(TimeMs now, const std::vector<JobId>& /*watch*/) override {
    clock_.Set(now);
    head_->EstimateNow();
    head_->Settle();
  }

  head::CoreOutput TakeOutput() override {
    head::CoreOutput out;
    auto changes = head::ReadChangeTail(
        *reader_, read_revision_, std::numeric_limits<int32_t>::max(), head::TailStart::kNext);
    CORRAL_CHECK(changes.ok(), "reading the head's changes: " + changes.status().message());
    for (head::Change& c : *changes) {
      read_revision_ = c.revision;
      out.changes.push_back(std::move(c));
    }
    std::lock_guard lock(mu_);
    out.nodes_to_notify = std::exchange(answered_, {});
    return out;
  }

  const head::HeadCore& core() const override { return head_->core(); }
  // The passes the head ran, as its /metrics count them (the pass duration histogram).
  PassStats pass_stats() const override {
    const std::string text = head_->metrics().Render();
    const std::string key = "\ncorral_schedule_pass_duration_seconds_count ";
    size_t at = text.find(key);
    if (at == std::string::npos) return {};
    return {std::stoll(text.substr(at + key.size())), 0};
  }

 private:
  // Runs a command as the holder of `bearer` at `now` and waits for its answer and for the
  // head to settle.
  template <typename C>
  Result<typename C::Answer> Call(const std::string& bearer, C command, TimeMs now) {
    clock_.Set(now);
    std::promise<Result<typename C::Answer>> answer;
    head_->Run(bearer, std::move(command),
               [&](Result<typename C::Answer> r) { answer.set_value(std::move(r)); });
    Result<typename C::Answer> r = answer.get_future().get();
    head_->Settle();
    return r;
  }

  // The agent's sync, held up to `hold`: its answer, once the head gives it, is the node's
  // next orders. A newer sync supersedes an unanswered one (the head answers that one at once;
  // the agent reads only the newest).
  void Sync(SyncRequest request, DurationMs hold, TimeMs now) {
    clock_.Set(now);
    request.wait_ms = hold;
    const std::string node = request.node;
    last_sync_[node] = request;
    uint64_t number = 0;
    {
      std::lock_guard lock(mu_);
      number = ++syncs_;
      newest_sync_[node] = number;
      orders_.erase(node);
      answered_.erase(node);
    }
    head_->Run(node_tokens_.at(node), head::SyncAgent{std::move(request)},
               [this, node, number](Result<SyncResponse> r) {
                 CORRAL_CHECK(r.ok(), "sync of " + node + ": " + r.status().message());
                 CORRAL_CHECK(!r->reregister, "the head does not know emulated node " + node);
                 std::lock_guard lock(mu_);
                 if (newest_sync_[node] != number) return;
                 orders_[node] = std::move(*r);
                 answered_.insert(node);
               });
    head_->Settle();
  }

  VirtualClock clock_;
  DurationMs hold_ms_ = 0;
  std::unique_ptr<head::Head> head_;
  std::unique_ptr<store::Store> reader_;
  uint64_t read_revision_ = 0;
  std::map<std::string, std::string> node_tokens_;
  std::map<std::string, SyncRequest> last_sync_;
  // Sync answers arrive on the head's state machine.
  std::mutex mu_;
  uint64_t syncs_ = 0;                           // GUARDED_BY(mu_)
  std::map<std::string, uint64_t> newest_sync_;  // GUARDED_BY(mu_)
  std::map<std::string, SyncResponse> orders_;   // GUARDED_BY(mu_): untaken answers
  std::set<std::string> answered_;               // GUARDED_BY(mu_): since TakeOutput
};

}  // namespace

Result<std::unique_ptr<HeadPort>> OpenShellPort(head::CoreConfig config, TimeMs now,
                                                const std::string& state_dir,
                                                DurationMs sync_hold_ms) {
  auto port = std::make_unique<ShellPort>();
  CORRAL_RETURN_IF_ERROR(port->Open(std::move(config), now, state_dir, sync_hold_ms));
  return std::unique_ptr<HeadPort>(std::move(port));
}

}  // namespace corral::sim
