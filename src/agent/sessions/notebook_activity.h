// When a notebook was last used (docs/interactive.md, idle culling): the agent asks its Jupyter
// server's /api/kernels and /api/terminals, as Determined does, because a user working in a
// notebook types into no terminal the head can see, and a CPU-bound cell leaves the GPUs idle.
// Jupyter runs on the agent's node, so its timestamps and the agent's clock agree; the agent
// reports how long ago the last activity was, never a time, so the head's clock need not.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/sessions/kernel_watch.h"
#include "agent/sessions/notebook.h"
#include "core/status.h"
#include "core/time.h"

namespace corral::agent {

// An ISO-8601 UTC time as Jupyter writes it ("2026-11-26T23:05:12.123456Z", or "+00:00"), in
// ms since the epoch; an error naming what is wrong otherwise.
Result<TimeMs> ParseIsoUtc(const std::string& text);

// The latest activity the JSON array `body` (an /api/kernels or /api/terminals answer) shows at
// `now`: `now` while any kernel is busy, else the latest `last_activity`; 0 for an empty array. An
// error naming the field when the answer is not such an array.
Result<TimeMs> LastActivity(const std::string& body, TimeMs now);

// The ids of the kernels in an /api/kernels answer (entries without one are skipped).
std::vector<std::string> KernelIds(const std::string& body);

// Asks `server` (job `job`'s, on loopback) for its kernels and terminals, each within
// `timeout_ms`: the latest activity of either (LastActivity), or why it could not tell. The
// kernels' ids go to `kernels` where given.
Result<TimeMs> PollNotebookActivity(const NotebookServer& server, JobId job, TimeMs now,
                                    int timeout_ms, std::vector<std::string>* kernels = nullptr);

// How often the agent asks, and how long it waits for each answer: a poll is two loopback
// requests, and the idle timeouts it serves are minutes.
inline constexpr DurationMs kNotebookPollMs = 2 * kSecond;
inline constexpr int kNotebookPollTimeoutMs = 300;
// Activity after this long without any is news for the head at once, like a busy kernel.
inline constexpr DurationMs kNotebookWakeMs = 10 * kSecond;
// A kernel whose WebSocket could not be followed is tried again after this long: each new
// connection makes Jupyter send the kernel requests of its own, activity that must not keep an
// idle notebook alive.
inline constexpr DurationMs kKernelWatchRetryMs = 60 * kSecond;

// The kernels of one notebook followed over their WebSockets (kernel_watch.h), by kernel id.
struct KernelFollow {
  std::optional<KernelWatch> watch;
  TimeMs retry_at = 0;  // after a failure: not before then
};
using KernelFollows = std::map<std::string, KernelFollow>;

// Paces the polls of one run: asks at most every `every_ms` and remembers the latest activity
// seen, so that a failed poll (a server busy starting) loses nothing. Kept with the run by the
// launcher; copies share the kernels' connections (used from the launcher's thread only).
struct NotebookActivity {
  TimeMs polled_at = 0;
  TimeMs active_at = 0;  // 0: no activity seen yet
  bool busy = false;     // at the last poll that answered, a kernel was running a cell
  std::shared_ptr<KernelFollows> kernels = std::make_shared<KernelFollows>();
};

// Polls when `every_ms` has passed since the last poll; a poll that fails is logged and changes
// only `polled_at`. A kernel runs a cell when Jupyter says it is busy or when its WebSocket
// showed a cell's start and not yet its end (kernel_watch.h: Jupyter's word alone can say idle
// while a cell runs); each kernel listed is followed from the poll that first lists it. True when
// `busy` changed, or when activity follows kNotebookWakeMs without any: the head hears of it at
// once, not at the next periodic sync, so that a long cell or a user back at the notebook is not
// taken for idleness in between.
bool UpdateNotebookActivity(NotebookActivity* a, const NotebookServer& server, JobId job,
                            TimeMs now, DurationMs every_ms, int timeout_ms);

}  // namespace corral::agent
