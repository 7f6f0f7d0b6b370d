#include "core/stop_cause.h"

#include "core/enum_names.h"
#include "core/job.h"

namespace corral {
namespace {

constexpr StopCause kAllCauses[] = {
    StopCause::kNone,        StopCause::kCancelled, StopCause::kPreempted,   StopCause::kRequeued,
    StopCause::kTimeLimit,   StopCause::kGpuError,  StopCause::kOutOfMemory, StopCause::kLost,
    StopCause::kCannotStart, StopCause::kCompleted, StopCause::kFailed};

constexpr PreemptKind kAllPreemptKinds[] = {
    PreemptKind::kNone, PreemptKind::kPolicy,          PreemptKind::kAgeBound,
    PreemptKind::kLas,  PreemptKind::kLasAcrossQueues, PreemptKind::kPriority,
    PreemptKind::kQuota};

bool StartsWith(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }
bool Contains(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

}  // namespace

const char* StopCauseName(StopCause c) {
  switch (c) {
    case StopCause::kNone:
      return "none";
    case StopCause::kCancelled:
      return "cancelled";
    case StopCause::kPreempted:
      return "preempted";
    case StopCause::kRequeued:
      return "requeued";
    case StopCause::kTimeLimit:
      return "time_limit";
    case StopCause::kGpuError:
      return "gpu_error";
    case StopCause::kOutOfMemory:
      return "out_of_memory";
    case StopCause::kLost:
      return "lost";
    case StopCause::kCannotStart:
      return "cannot_start";
    case StopCause::kCompleted:
      return "completed";
    case StopCause::kFailed:
      return "failed";
  }
  return "none";
}

bool ParseStopCause(const std::string& text, StopCause* out) {
  return ParseByName(text, kAllCauses, StopCauseName, out);
}

const char* PreemptKindName(PreemptKind k) {
  switch (k) {
    case PreemptKind::kNone:
      return "none";
    case PreemptKind::kPolicy:
      return "policy";
    case PreemptKind::kAgeBound:
      return "age_bound";
    case PreemptKind::kLas:
      return "las";
    case PreemptKind::kLasAcrossQueues:
      return "las_across_queues";
    case PreemptKind::kPriority:
      return "priority";
    case PreemptKind::kQuota:
      return "quota";
  }
  return "none";
}

bool ParsePreemptKind(const std::string& text, PreemptKind* out) {
  return ParseByName(text, kAllPreemptKinds, PreemptKindName, out);
}

StopCause RunEndCause(RunState state, StopCause stop) {
  switch (state) {
    case RunState::kSucceeded:
      return StopCause::kCompleted;
    case RunState::kLost:
      return StopCause::kLost;
    case RunState::kCancelled:
      return StopCause::kCancelled;
    case RunState::kPreempted:
      return stop == StopCause::kRequeued ? StopCause::kRequeued : StopCause::kPreempted;
    case RunState::kScheduled:
    case RunState::kRunning:
      return stop;
    case RunState::kFailed:
      break;
  }
  switch (stop) {
    case StopCause::kTimeLimit:
    case StopCause::kGpuError:
    case StopCause::kOutOfMemory:
    case StopCause::kCannotStart:
      return stop;
    default:
      return StopCause::kFailed;
  }
}

StopCause LegacyStopCause(const std::string& stop_reason) {
  static const std::pair<const char*, StopCause> kPrefixes[] = {
      {kReasonCancelled, StopCause::kCancelled},    {kReasonPreempted, StopCause::kPreempted},
      {kReasonRequeued, StopCause::kRequeued},      {kReasonTimeLimit, StopCause::kTimeLimit},
      {kReasonGpuError, StopCause::kGpuError},      {kReasonOutOfMemory, StopCause::kOutOfMemory},
      {kReasonCannotStart, StopCause::kCannotStart}};
  for (const auto& [prefix, cause] : kPrefixes) {
    if (StartsWith(stop_reason, prefix)) return cause;
  }
  // The head's words for a batch script that ended by itself; any other stop was a gang's
  // member failing.
  if (stop_reason == "the batch script (replica 0) ended with code 0") return StopCause::kCompleted;
  return StopCause::kFailed;
}

StopCause LegacyRunCause(RunState state, bool stop_requested, const std::string& reason) {
  if (!IsRunOver(state)) return stop_requested ? LegacyStopCause(reason) : StopCause::kNone;
  return RunEndCause(state, LegacyStopCause(reason));
}

PreemptKind LegacyPreemptKind(const std::string& stop_reason) {
  if (!StartsWith(stop_reason, kReasonPreempted)) return PreemptKind::kNone;
  // The scheduler's words for each rule (sched/pass.cc), as they were logged.
  if (Contains(stop_reason, "attained less service")) {
    return Contains(stop_reason, " was over its quota of ") ? PreemptKind::kLasAcrossQueues
                                                            : PreemptKind::kLas;
  }
  if (Contains(stop_reason, "reclaims its quota")) return PreemptKind::kQuota;
  if (Contains(stop_reason, " of priority ")) return PreemptKind::kPriority;
  if (Contains(stop_reason, "past its age bound")) return PreemptKind::kAgeBound;
  return PreemptKind::kPolicy;
}

}  // namespace corral
