#include "agents/job_records.h"

#include <algorithm>

namespace corral::bench {

void AddJobPage(const Json& page, JobId first, JobId last, JobTimes* out) {
  auto jobs = page.find("jobs");
  if (jobs == page.end() || !jobs->is_array()) return;
  for (const Json& j : *jobs) {
    JobId id = j.value("id", JobId{0});
    if (id < first || id > last) continue;
    ++out->seen;
    std::string state = j.value("state", "");
    TimeMs submitted = j.value("submitted_at", TimeMs{0});
    if (out->first_submitted == 0 || submitted < out->first_submitted) {
      out->first_submitted = submitted;
    }
    if (state == "succeeded" || state == "failed" || state == "cancelled") {
      ++out->terminal;
      if (state != "succeeded") ++out->failed;
      out->last_ended = std::max(out->last_ended, j.value("ended_at", TimeMs{0}));
    }
    auto runs = j.find("runs");
    if (runs == j.end() || !runs->is_array() || runs->empty()) continue;
    const Json& run = (*runs)[0];
    TimeMs scheduled = run.value("scheduled_at", TimeMs{0});
    TimeMs started = run.value("started_at", TimeMs{0});
    TimeMs ended = j.value("ended_at", TimeMs{0});
    if (scheduled > 0) out->queued.Add(static_cast<double>(scheduled - submitted));
    if (started <= 0) continue;
    out->submit_to_start.Add(static_cast<double>(started - submitted));
    if (scheduled > 0) out->dispatch.Add(static_cast<double>(started - scheduled));
    if (ended > 0) out->exit_seen.Add(static_cast<double>(ended - started));
  }
}

}  // namespace corral::bench
