// scontrol update JobId=N [TimeLimit=T] [Priority=P] [Partition=Q|Account=Q]: a pending job's
// time limit, priority or queue through POST /v1/jobs/ID/update. The head decides what the
// caller may change (only an admin raises a limit or a priority, as Slurm).
#include <algorithm>
#include <cctype>
#include <charconv>
#include <limits>
#include <optional>
#include <ostream>

#include "cli/commands.h"
#include "cli/slurm_errors.h"
#include "slurm/batch.h"
#include "slurm/format.h"

namespace corral::cli {
namespace {

struct UpdateRequest {
  std::vector<std::string> jobs;
  std::optional<DurationMs> time_limit_ms;  // as Slurm shows it: with a --signal lead
  std::optional<int32_t> priority;
  std::optional<std::string> queue;
};

Result<UpdateRequest> ParseUpdate(const std::vector<std::string>& words) {
  UpdateRequest r;
  for (const std::string& w : words) {
    const size_t eq = w.find('=');
    if (eq == std::string::npos) {
      return InvalidArgument("update: \"" + w +
                             "\" is not KEY=VALUE (JobId=, TimeLimit=, "
                             "Priority=, Partition=, Account=)");
    }
    const std::string key = slurm::AsciiLower(w.substr(0, eq)), value = w.substr(eq + 1);
    if (key == "jobid" || key == "job") {
      for (size_t s = 0; s <= value.size();) {
        size_t comma = value.find(',', s);
        std::string id = value.substr(s, comma == std::string::npos ? comma : comma - s);
        if (!id.empty()) r.jobs.push_back(id);
        s = comma == std::string::npos ? value.size() + 1 : comma + 1;
      }
    } else if (key == "timelimit") {
      auto t = slurm::ParseSlurmTime("TimeLimit", value);
      if (!t.ok()) return t.status();
      r.time_limit_ms = *t;
    } else if (key == "priority") {
      int64_t p = 0;
      auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), p);
      if (value.empty() || ec != std::errc{} || end != value.data() + value.size() || p < 0 ||
          p > std::numeric_limits<int32_t>::max()) {
        return InvalidArgument("update: Priority=\"" + value + "\", want a whole number");
      }
      r.priority = static_cast<int32_t>(p);
    } else if (key == "partition" || key == "account") {
      // An account is a queue (docs/slurm.md): both name the job's queue.
      if (r.queue && *r.queue != value) {
        return InvalidArgument("update: Partition and Account name different queues (" + *r.queue +
                               ", " + value + ")");
      }
      r.queue = value;
    } else {
      return InvalidArgument("update: \"" + w.substr(0, eq) +
                             "\" cannot be updated on Corral; it updates TimeLimit, Priority "
                             "and Partition (or Account) of a pending job");
    }
  }
  if (r.jobs.empty()) return InvalidArgument("update: want JobId=ID");
  if (!r.time_limit_ms && !r.priority && !r.queue) {
    return InvalidArgument("update: want TimeLimit=, Priority= or Partition=");
  }
  return r;
}

// The head's body for one job. A batch job's --signal lead was taken off its limit at submit
// (docs/slurm.md), so a TimeLimit is taken off the same way.
Json UpdateBody(const UpdateRequest& r, const Job& job) {
  Json body = Json::object();
  if (r.time_limit_ms) {
    DurationMs limit = *r.time_limit_ms;
    if (limit > 0 && job.spec.batch && job.spec.checkpoint_signal != 15) {
      limit = std::max<DurationMs>(1000, limit - job.spec.grace_ms);
    }
    body["time_limit_ms"] = limit;
  }
  if (r.priority) body["priority"] = *r.priority;
  if (r.queue) body["queue"] = *r.queue;
  return body;
}

}  // namespace

int RunScontrolUpdate(const std::vector<std::string>& words, CliContext& ctx) {
  auto r = ParseUpdate(words);
  if (!r.ok()) return SlurmError(ctx, "scontrol", r.status().message());
  ApiClient api(ctx);
  for (const std::string& text : r->jobs) {
    auto ref = ResolveJobRef(api, text);
    if (!ref.ok()) return SlurmError(ctx, "scontrol", "Invalid job id specified: " + text);
    const std::string path = "/v1/jobs/" + std::to_string(ref->id);
    auto got = api.CallJson("GET", path);
    if (!got.ok()) return SlurmError(ctx, "scontrol", "Invalid job id specified: " + text);
    auto job = JobFromJson(got->value("job", Json::object()));
    if (!job.ok()) return SlurmError(ctx, "scontrol", job.status().message());
    auto reply = api.CallJson("POST", path + "/update", UpdateBody(*r, *job).dump());
    if (!reply.ok()) {
      return SlurmError(ctx, "scontrol", "update JobId=" + text + ": " + reply.status().message());
    }
  }
  return kExitOk;
}

}  // namespace corral::cli
