#include "sim/head_port.h"

namespace corral::sim {

namespace {

// The core with nothing around it: no store (nothing is committed), no credentials (callers
// are named), and the nodes to answer taken from its output, as the shell answers held syncs.
class CorePort final : public HeadPort {
 public:
  CorePort(head::CoreConfig config, TimeMs now) : core_(std::move(config)) { core_.Start(now); }

  Status SetQueue(const QueueConfig& queue, TimeMs now) override {
    return core_.SetQueue(Caller::System(), queue, now).status();
  }

  Status CreateReservation(const NodeReservationSpec& reservation, TimeMs now) override {
    return core_.CreateReservation(Caller::System(), reservation, now).status();
  }

  Result<Job> Submit(JobSpec spec, const std::string& owner, TimeMs now) override {
    // An admin of no name: the owner may be none.
    Caller submitter{Caller::Kind::kSystem, "", Role::kAdmin, {}};
    return core_.Submit(submitter, std::move(spec), owner, now);
  }

  uint64_t Register(const RegisterRequest& request, TimeMs now) override {
    Result<RegisterResponse> r =
        core_.Register(Caller::System(), request, "node-" + request.name, now);
    CORRAL_CHECK(r.ok(), r.status().message());
    return r->agent_epoch;
  }

  void Report(const SyncRequest& request, TimeMs now) override {
    Result<bool> known = core_.Report(Caller::Node(request.node), request, now);
    CORRAL_CHECK(known.ok() && *known, "the core does not know emulated node " + request.node);
  }

  void AwaitOrders(const SyncRequest&, TimeMs) override {}

  SyncResponse OrdersFor(const std::string& node, uint64_t from) override {
    return core_.AnswerFor(node, from);
  }

  void Tick(TimeMs now) override { core_.Tick(now); }
  void Schedule(TimeMs now) override { core_.Schedule(now); }
  void EstimateStarts(TimeMs now) override { core_.EstimateStarts(now); }

  head::CoreOutput TakeOutput() override {
    (void)core_.TakeDirty();  // there are no snapshot rows to write
    return core_.TakeOutput();
  }

  const head::HeadCore& core() const override { return core_; }

 private:
  head::HeadCore core_;
};

}  // namespace

std::unique_ptr<HeadPort> MakeCorePort(head::CoreConfig config, TimeMs now) {
  return std::make_unique<CorePort>(std::move(config), now);
}

}  // namespace corral::sim
