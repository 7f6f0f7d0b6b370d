#include "core/job.h"

#include <algorithm>
#include <charconv>

#include "core/enum_names.h"

namespace corral {

std::string ToString(const RunId& id) {
  return std::to_string(id.job) + "." + std::to_string(id.attempt);
}

bool ParseRunId(const std::string& text, RunId* out) {
  auto dot = text.find('.');
  if (dot == std::string::npos) return false;
  const char* b = text.data();
  auto r1 = std::from_chars(b, b + dot, out->job);
  auto r2 = std::from_chars(b + dot + 1, b + text.size(), out->attempt);
  return r1.ec == std::errc{} && r1.ptr == b + dot && r2.ec == std::errc{} &&
         r2.ptr == b + text.size();
}

std::string StepRunId(const RunId& run, int32_t step) {
  return ToString(run) + "-s" + std::to_string(step);
}

bool ParseStepRunId(const std::string& text, RunId* run, int32_t* step) {
  auto dash = text.find("-s");
  if (dash == std::string::npos || !ParseRunId(text.substr(0, dash), run)) return false;
  const char* b = text.data() + dash + 2;
  const char* e = text.data() + text.size();
  auto r = std::from_chars(b, e, *step);
  return r.ec == std::errc{} && r.ptr == e && *step >= 0;
}

const char* JobStateName(JobState s) {
  switch (s) {
    case JobState::kPending:
      return "pending";
    case JobState::kScheduled:
      return "scheduled";
    case JobState::kRunning:
      return "running";
    case JobState::kSucceeded:
      return "succeeded";
    case JobState::kFailed:
      return "failed";
    case JobState::kCancelled:
      return "cancelled";
  }
  return "unknown";
}

bool ParseJobState(const std::string& text, JobState* out) {
  for (JobState s : {JobState::kPending, JobState::kScheduled, JobState::kRunning,
                     JobState::kSucceeded, JobState::kFailed, JobState::kCancelled}) {
    if (text == JobStateName(s)) {
      *out = s;
      return true;
    }
  }
  return false;
}

namespace {
constexpr PendingCode kPendingCodes[] = {
    PendingCode::kNone,       PendingCode::kResources,      PendingCode::kReserved,
    PendingCode::kPreempting, PendingCode::kQueueLimit,     PendingCode::kNoFit,
    PendingCode::kHeld,       PendingCode::kDependency,     PendingCode::kDependencyNever,
    PendingCode::kArrayLimit, PendingCode::kReservationWait};
}  // namespace

const char* PendingCodeName(PendingCode c) {
  switch (c) {
    case PendingCode::kNone:
      return "none";
    case PendingCode::kResources:
      return "resources";
    case PendingCode::kReserved:
      return "reserved";
    case PendingCode::kPreempting:
      return "preempting";
    case PendingCode::kQueueLimit:
      return "queue_limit";
    case PendingCode::kNoFit:
      return "no_fit";
    case PendingCode::kHeld:
      return "held";
    case PendingCode::kDependency:
      return "dependency";
    case PendingCode::kDependencyNever:
      return "dependency_never";
    case PendingCode::kArrayLimit:
      return "array_limit";
    case PendingCode::kReservationWait:
      return "reservation_wait";
  }
  return "unknown";
}

bool ParsePendingCode(const std::string& text, PendingCode* out) {
  return ParseByName(text, kPendingCodes, PendingCodeName, out);
}

const char* EstimateConfidenceName(EstimateConfidence c) {
  switch (c) {
    case EstimateConfidence::kHigh:
      return "high";
    case EstimateConfidence::kMedium:
      return "medium";
    case EstimateConfidence::kLow:
      return "low";
  }
  return "low";
}

bool ParseEstimateConfidence(const std::string& text, EstimateConfidence* out) {
  constexpr EstimateConfidence kAll[] = {EstimateConfidence::kHigh, EstimateConfidence::kMedium,
                                         EstimateConfidence::kLow};
  return ParseByName(text, kAll, EstimateConfidenceName, out);
}

const char* RunStateName(RunState s) {
  switch (s) {
    case RunState::kScheduled:
      return "scheduled";
    case RunState::kRunning:
      return "running";
    case RunState::kSucceeded:
      return "succeeded";
    case RunState::kFailed:
      return "failed";
    case RunState::kCancelled:
      return "cancelled";
    case RunState::kPreempted:
      return "preempted";
    case RunState::kLost:
      return "lost";
  }
  return "unknown";
}

bool ParseRunState(const std::string& text, RunState* out) {
  for (RunState s :
       {RunState::kScheduled, RunState::kRunning, RunState::kSucceeded, RunState::kFailed,
        RunState::kCancelled, RunState::kPreempted, RunState::kLost}) {
    if (text == RunStateName(s)) {
      *out = s;
      return true;
    }
  }
  return false;
}

std::vector<GpuShare> Shares(const ReplicaPlacement& p) {
  std::vector<GpuShare> out;
  for (size_t i = 0; i < p.gpus.size(); ++i) {
    out.push_back(
        {p.gpus[i], i < p.gpu_milli.size() ? p.gpu_milli[i] : kGpuMilli, p.gpu_memory_mb});
  }
  return out;
}

std::pair<TimeMs, TimeMs> Run::ReplicaHeld(int32_t r, TimeMs end) const {
  const size_t i = static_cast<size_t>(r);
  TimeMs from = started_at;
  if (i < joined_at.size()) from = std::max(from, joined_at[i]);
  TimeMs to = end;
  if (i < left_at.size() && left_at[i] > 0) to = std::min(to, left_at[i]);
  return {from, to};
}

DurationMs Run::ReplicaMs(TimeMs end) const {
  DurationMs ms = 0;
  for (size_t r = 0; r < placement.size(); ++r) {
    const auto [from, to] = ReplicaHeld(static_cast<int32_t>(r), end);
    ms += std::max<DurationMs>(0, to - from);
  }
  return ms;
}

bool Run::Departed(int32_t replica) const {
  return std::binary_search(departed.begin(), departed.end(), replica);
}

std::vector<ReplicaPlacement> Run::HeldPlacement() const {
  std::vector<ReplicaPlacement> out = LivePlacement();
  for (int32_t r : departed) {
    if (r < static_cast<int32_t>(exit_codes.size()) && exit_codes[r] == kNotExited) {
      out.push_back(placement[r]);
    }
  }
  return out;
}

int32_t Run::Leaving() const {
  int32_t n = 0;
  for (int32_t r : departed)
    n += r < static_cast<int32_t>(exit_codes.size()) && exit_codes[r] == kNotExited;
  return n;
}

std::vector<ReplicaPlacement> Run::LivePlacement() const {
  std::vector<ReplicaPlacement> out;
  for (size_t r = 0; r < placement.size(); ++r) {
    if (!Departed(static_cast<int32_t>(r))) out.push_back(placement[r]);
  }
  return out;
}

std::string ReplicaSizeText(const Job& job) {
  if (!job.spec.IsElastic()) return std::to_string(job.spec.replicas);
  const Run* run = job.CurrentRun();
  const int32_t held = run && !IsRunOver(run->state) ? run->LiveReplicas() : 0;
  return std::to_string(held) + "/" + std::to_string(job.spec.min_replicas) + ":" +
         std::to_string(job.spec.replicas);
}

}  // namespace corral
