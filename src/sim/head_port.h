// What the simulator's loop (sim/simulator.cc) drives: a head on virtual time, as its emulated
// agents and its users reach it. Two implementations: the head's core alone (MakeCorePort,
// what `corral simulate` runs), and a whole head shell with its store, group commit and held
// syncs (sim/shell_port.h, which the parity test runs against the core on the same trace).
//
// Every call is made at the core's time `now` and has taken effect when it returns. A command
// (every call but OrdersFor, EstimateStarts and the readers) is followed by the scheduling pass
// it asks for, as in a head that serves: the shell's own (head::Head runs one after each
// command that wants one), the core port's the same. Owned and called by one thread, the
// loop's.
#pragma once

#include <utility>

#include <functional>
#include <memory>
#include <string>

#include "core/agent_protocol.h"
#include "core/dataset.h"
#include "core/job.h"
#include "core/status.h"
#include "head/head_core.h"

namespace corral::sim {

class HeadPort {
 public:
  virtual ~HeadPort() = default;

  // An admin sets a queue.
  virtual Status SetQueue(const QueueConfig& queue, TimeMs now) = 0;
  // An admin creates a reservation or maintenance window.
  virtual Status CreateReservation(const NodeReservationSpec& reservation, TimeMs now) = 0;
  // An admin registers a dataset (its manifest's figures as `corral datasets add` sends them).
  virtual Status AddDataset(const Dataset& dataset, TimeMs now) = 0;
  // A user's submission, `owner` the job's owner ("" may be one), submitted by an admin.
  virtual Result<Job> Submit(JobSpec spec, const std::string& owner, TimeMs now) = 0;

  // A node's agent (re)starts and registers: its agent epoch.
  virtual uint64_t Register(const RegisterRequest& request, TimeMs now) = 0;
  // The agent's sync: what it runs and the orders it holds. REQUIRES: the head knows it.
  virtual void Report(const SyncRequest& request, TimeMs now) = 0;
  // The agent took its orders and reports nothing new: it waits for the next. A shell's agent
  // holds a sync for them (a report of the same); the core names the nodes to answer itself.
  virtual void AwaitOrders(const SyncRequest& request, TimeMs now) = 0;
  // The orders for `node` from the version it holds (`from`; 0: all of them).
  virtual SyncResponse OrdersFor(const std::string& node, uint64_t from) = 0;

  // The head's timer: liveness, time limits, stops, retirement, and its pass.
  virtual void Tick(TimeMs now) = 0;
  // The timer's scheduling pass alone (and those it asks for at once: a pass cut short by its
  // work budget goes on).
  virtual void Schedule(TimeMs now) = 0;
  // The head refreshes its start-time estimates of pending jobs; read them through core().
  // `watch`: the jobs the caller reads (HeadCore::EstimateStarts); a head shell estimates all.
  virtual void EstimateStarts(TimeMs now, const std::vector<JobId>& watch) = 0;

  // The changes made since the last call (in order), and the nodes with new orders.
  virtual head::CoreOutput TakeOutput() = 0;

  // The scheduling passes run so far, and the wall time spent in them where measured.
  struct PassStats {
    int64_t passes = 0;
    double seconds = 0;
  };
  virtual PassStats pass_stats() const = 0;

  // The head's core, to read between calls (on the loop's thread) and from inside a call
  // through CoreConfig::adjust_scheduler_input.
  virtual const head::HeadCore& core() const = 0;
};

// Makes the port a simulation runs on: a head with `config`, started at `now`.
using HeadPortFactory =
    std::function<Result<std::unique_ptr<HeadPort>>(head::CoreConfig config, TimeMs now)>;

// The head's core alone: each call is the core's, its output taken as a shell would.
std::unique_ptr<HeadPort> MakeCorePort(head::CoreConfig config, TimeMs now);

}  // namespace corral::sim
