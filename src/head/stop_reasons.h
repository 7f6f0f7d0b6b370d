// How a run's stop reason begins: it decides what becomes of the job when the run is over
// (core_jobs.cc), and readers of the change log (the simulator's report) tell stops apart by it.
#pragma once

#include <string>

namespace corral::head {

inline constexpr char kReasonCancelled[] = "cancelled";
inline constexpr char kReasonPreempted[] = "preempted";
// A replica the agent refused to start (its owner has no account there, a root job): the
// reason says why, rather than "exited with code 127".
inline constexpr char kReasonCannotStart[] = "cannot start";
// A replica the kernel killed for exceeding its memory limit (Slurm's OUT_OF_MEMORY).
inline constexpr char kReasonOutOfMemory[] = "out of memory";
inline constexpr char kReasonTimeLimit[] = "time limit";
inline constexpr char kReasonRequeued[] = "requeued";

inline bool StartsWith(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

}  // namespace corral::head
