// Why a run stopped, or is being stopped. The head's core decides what becomes of a job by
// this cause, which the changes that stop and end a run carry (head/change.h) and the run keeps
// (Run::cause); the simulator and the Slurm views read it too. The run's reason says the same
// for people, and nothing reads the reason back to decide.
#pragma once

#include <string>

namespace corral {

enum class RunState;

enum class StopCause {
  kNone,         // not stopped, nor asked to stop
  kCancelled,    // by a user, an idle or a lost session's culling
  kPreempted,    // by the scheduler, for another job
  kRequeued,     // by a user, or off a GPU that went critical: back to pending
  kTimeLimit,    // it ran its time limit
  kGpuError,     // an Xid that was the application's fault
  kOutOfMemory,  // a replica exceeded its memory limit
  kLost,         // its node (or its agent's record of it) was lost, or its stop not confirmed
  kCannotStart,  // the agent refused to start a replica
  kCompleted,    // it ended by itself, successfully (or its batch script did)
  kFailed,       // it ended by itself, unsuccessfully (or a gang member did)
};

const char* StopCauseName(StopCause c);
bool ParseStopCause(const std::string& text, StopCause* out);

// Which rule let the scheduler preempt a run (sched::PreemptDecision), carried with the stop
// so that the head's metrics count preemptions by it.
enum class PreemptKind {
  kNone,             // not a preemption
  kPolicy,           // a preemptive order other than corral's (sjf, srtf, las) ranked it lower
  kAgeBound,         // a job that waited past its queue's age bound
  kLas,              // a job of its queue that has attained less service
  kLasAcrossQueues,  // the same, from another queue while its own is over its quota
  kPriority,         // a job of higher priority
  kQuota,            // a queue reclaiming its quota
};

const char* PreemptKindName(PreemptKind k);
bool ParsePreemptKind(const std::string& text, PreemptKind* out);

// How a stop's reason begins, for people: the head writes the cause's words first.
inline constexpr char kReasonCancelled[] = "cancelled";
inline constexpr char kReasonPreempted[] = "preempted";
// A replica the agent refused to start (its owner has no account there, a root job): the
// reason says why, rather than "exited with code 127".
inline constexpr char kReasonCannotStart[] = "cannot start";
// A replica the kernel killed for exceeding its memory limit (Slurm's OUT_OF_MEMORY).
inline constexpr char kReasonOutOfMemory[] = "out of memory";
inline constexpr char kReasonTimeLimit[] = "time limit";
inline constexpr char kReasonRequeued[] = "requeued";
// A GPU error that was the application's fault (an Xid of the policy table's first row): the
// job fails whatever its exit codes (its processes may well exit 0 on the stop signal).
inline constexpr char kReasonGpuError[] = "GPU error";

// The cause a run ended with, given its final state and the cause of the stop it was asked
// for (kNone: none): a failure keeps the stop's cause when the stop says why it failed.
StopCause RunEndCause(RunState state, StopCause stop);

// For documents and changes written before causes were stored: the cause their reason's words
// stand for. Only the decoders call these, once, as they read an old record.
StopCause LegacyStopCause(const std::string& stop_reason);
StopCause LegacyRunCause(RunState state, bool stop_requested, const std::string& reason);
PreemptKind LegacyPreemptKind(const std::string& stop_reason);

}  // namespace corral
