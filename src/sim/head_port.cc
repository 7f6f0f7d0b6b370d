#include "sim/head_port.h"

#include <chrono>

namespace corral::sim {

namespace {

// The core with nothing around it: no store (nothing is committed), no credentials (callers
// are named), and the nodes to answer taken from its output, as the shell answers held syncs.
// After each command the pass it asks for, as head::Head::Drain runs it.
class CorePort final : public HeadPort {
 public:
  CorePort(head::CoreConfig config, TimeMs now) : core_(std::move(config)) {
    core_.Start(now);
    PassesWanted(now);
  }

  Status SetQueue(const QueueConfig& queue, TimeMs now) override {
    Status st = core_.SetQueue(Caller::System(), queue, now).status();
    PassesWanted(now);
    return st;
  }

  Status CreateReservation(const NodeReservationSpec& reservation, TimeMs now) override {
    Status st = core_.CreateReservation(Caller::System(), reservation, now).status();
    PassesWanted(now);
    return st;
  }

  Status AddDataset(const Dataset& dataset, TimeMs now) override {
    Status st = core_.AddDataset(Caller::System(), dataset, now).status();
    PassesWanted(now);
    return st;
  }

  Result<Job> Submit(JobSpec spec, const std::string& owner, TimeMs now) override {
    // An admin of no name: the owner may be none.
    Caller submitter{Caller::Kind::kSystem, "", Role::kAdmin, {}};
    Result<Job> job = core_.Submit(submitter, std::move(spec), owner, now);
    PassesWanted(now);
    return job;
  }

  uint64_t Register(const RegisterRequest& request, TimeMs now) override {
    Result<RegisterResponse> r =
        core_.Register(Caller::System(), request, "node-" + request.name, now);
    CORRAL_CHECK(r.ok(), r.status().message());
    PassesWanted(now);
    return r->agent_epoch;
  }

  void Report(const SyncRequest& request, TimeMs now) override {
    Result<bool> known = core_.Report(Caller::Node(request.node), request, now);
    CORRAL_CHECK(known.ok() && *known, "the core does not know emulated node " + request.node);
    PassesWanted(now);
  }

  void AwaitOrders(const SyncRequest&, TimeMs) override {}

  SyncResponse OrdersFor(const std::string& node, uint64_t from) override {
    return core_.AnswerFor(node, from);
  }

  void Tick(TimeMs now) override {
    core_.Tick(now);
    PassesWanted(now);
  }
  void Schedule(TimeMs now) override {
    Pass(now);
    PassesWanted(now);
  }
  void EstimateStarts(TimeMs now, const std::vector<JobId>& watch) override {
    core_.EstimateStarts(now, watch);
  }

  head::CoreOutput TakeOutput() override {
    (void)core_.TakeDirty();  // there are no snapshot rows to write
    return core_.TakeOutput();
  }

  const head::HeadCore& core() const override { return core_; }
  PassStats pass_stats() const override { return stats_; }

 private:
  // A head runs passes one after the other while the core wants one (a pass cut short by its
  // work budget asks for the next); past this many in a row the port leaves the core wanting
  // one, and the loop reports a scheduler that never finishes.
  static constexpr int64_t kMaxPassesInARow = 1000;

  void PassesWanted(TimeMs now) {
    for (int64_t n = 0; core_.schedule_wanted() && n < kMaxPassesInARow; ++n) Pass(now);
  }

  void Pass(TimeMs now) {
    auto t0 = std::chrono::steady_clock::now();
    core_.Schedule(now);
    stats_.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ++stats_.passes;
  }

  head::HeadCore core_;
  PassStats stats_;
};

}  // namespace

std::unique_ptr<HeadPort> MakeCorePort(head::CoreConfig config, TimeMs now) {
  return std::make_unique<CorePort>(std::move(config), now);
}

}  // namespace corral::sim
