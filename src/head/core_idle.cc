// Idle GPUs (DESIGN §11): a running run whose GPUs all stay under a utilisation threshold for a
// while is flagged idle. The clocks are GpuWatch's (gpu_watch.h), built from the agents'
// samples; here the core emits what follows for the queues that stop idle runs.
#include "core/spec.h"
#include "head/head_core.h"

namespace corral::head {

void HeadCore::ObserveUse(const std::string& node, TimeMs now) {
  gpus_.ObserveUse(state_, active().OnNode(node), node, config_.idle_threshold_percent, now);
  FlagIdle(now);
}

void HeadCore::FlagIdle(TimeMs now) {
  gpus_.FlagIdle(state_, config_.idle_after_ms, now);
  StopIdle(now);
}

// The second half of the idle rule, for queues that opt in: a warning (a durable job event the
// owner sees in `corral show` and the event stream), then, if the GPUs stay idle through the
// warning period, a stop. Only preemptible runs: their owners accepted being stopped for
// others. The run is cancelled rather than requeued, since a requeued idle job would only
// hold GPUs idle again. A run used again before its stop is forgiven: its clocks start over.
void HeadCore::StopIdle(TimeMs now) {
  GpuWatch::IdleStops due = gpus_.DueStops(state_, config_.idle_stop_queues, now);
  for (const auto& [id, since] : due.warn) {
    int32_t attempt = state_.jobs.at(id).CurrentRun()->attempt;
    TimeMs stop_at = now + config_.idle_stop_warning_ms;
    gpus_.Warned(RunId{id, attempt}, stop_at);
    Emit(Caller::System(), now, IdleWarned{id, attempt, since, stop_at});
  }
  for (const auto& [id, since] : due.stop) {
    // Cancelled: the run ends cancelled, and so does the job (core_jobs.cc).
    RequestStop(state_.jobs.at(id), StopCause::kCancelled,
                std::string(kReasonCancelled) + ": its GPUs stayed under " +
                    std::to_string(config_.idle_threshold_percent) + "% use for " +
                    FormatDuration(now - since) + " (queue " + state_.jobs.at(id).spec.queue +
                    " stops idle runs)",
                now);
  }
}

}  // namespace corral::head
