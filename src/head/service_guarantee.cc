#include "head/service_guarantee.h"

#include <utility>

#include <cstdio>
#include <vector>

#include "core/queue_tree.h"

namespace corral::head {
namespace {

// "6", "1.5": milli-GPUs as the errors say them.
std::string GuaranteeGpus(int64_t milli) {
  char buf[32];
  if (milli % kGpuMilli == 0) {
    std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(milli / kGpuMilli));
  } else {
    std::snprintf(buf, sizeof buf, "%.3g", static_cast<double>(milli) / kGpuMilli);
  }
  return buf;
}

// `queue` and each of its ancestors, itself first.
std::vector<std::string> GuaranteeLevels(const std::string& queue) {
  std::vector<std::string> out{queue};
  for (std::string& a : QueueAncestors(queue)) out.push_back(std::move(a));
  return out;
}

bool GuaranteeCountsIn(const std::string& queue, const std::string& level) {
  return queue == level ||
         (queue.size() > level.size() && queue.compare(0, level.size(), level) == 0 &&
          queue[level.size()] == '/');
}

// The other services' guaranteed GPUs that count in `level`, and their names.
int64_t GuaranteeOthersIn(const std::string& level, const std::string& except,
                          const std::map<std::string, Service>& services, std::string* names) {
  int64_t milli = 0;
  for (const auto& [name, s] : services) {
    const int64_t g = GuaranteedGpuMilli(s.spec);
    if (name == except || s.removing || g == 0 || !GuaranteeCountsIn(s.spec.job.queue, level))
      continue;
    milli += g;
    *names += (names->empty() ? "'" : ", '") + name + "'";
  }
  return milli;
}

}  // namespace

int64_t GuaranteedGpuMilli(const ServiceSpec& s) {
  return int64_t{s.min_replicas} * s.job.per_replica.gpu_milli;
}

Status CheckServiceGuarantee(const ServiceSpec& spec,
                             const std::map<std::string, Service>& services,
                             const std::map<std::string, QueueConfig>& queues,
                             const std::string& field) {
  const int64_t own = GuaranteedGpuMilli(spec);
  if (own == 0) return Status::Ok();
  for (const std::string& level : GuaranteeLevels(spec.job.queue)) {
    auto q = queues.find(level);
    if (q == queues.end()) continue;
    std::string names;
    const int64_t others = GuaranteeOthersIn(level, spec.name, services, &names);
    const QueueConfig& c = q->second;
    std::string bound;
    if (c.quota_gpus > 0 && own + others > int64_t{c.quota_gpus} * kGpuMilli) {
      bound = "the quota of queue '" + level + "' (" + std::to_string(c.quota_gpus) + " GPUs)";
    } else if (c.limit_gpus >= 0 && own + others > int64_t{c.limit_gpus} * kGpuMilli) {
      bound = "what queue '" + level + "' may ever use (limit " + std::to_string(c.limit_gpus) +
              " GPUs)";
    } else {
      continue;
    }
    return InvalidArgument(
        "field '" + field + "': " + std::to_string(spec.min_replicas) +
        " guaranteed replica(s) of " + GuaranteeGpus(spec.job.per_replica.gpu_milli) + " GPU(s) (" +
        GuaranteeGpus(own) + " GPUs never preempted) do not fit " + bound +
        (others > 0
             ? ", of which service(s) " + names + " guarantee " + GuaranteeGpus(others) + " already"
             : "") +
        "; lower min_replicas (replicas above it are preemptible and may borrow) or use a "
        "queue with room");
  }
  return Status::Ok();
}

Status CheckQueueKeepsGuarantees(const QueueConfig& q,
                                 const std::map<std::string, Service>& services) {
  std::string names;
  const int64_t held = GuaranteeOthersIn(q.name, "", services, &names);
  if (held == 0) return Status::Ok();
  std::string field, setting;
  if (q.quota_gpus > 0 && held > int64_t{q.quota_gpus} * kGpuMilli) {
    field = "quota_gpus";
    setting = "a quota of " + std::to_string(q.quota_gpus) + " GPUs";
  } else if (q.limit_gpus >= 0 && held > int64_t{q.limit_gpus} * kGpuMilli) {
    field = "limit_gpus";
    setting = "a limit of " + std::to_string(q.limit_gpus) + " GPUs";
  } else {
    return Status::Ok();
  }
  return InvalidArgument("field '" + field + "': queue '" + q.name + "' would have " + setting +
                         ", below the " + GuaranteeGpus(held) +
                         " GPUs that the guaranteed replicas of service(s) " + names +
                         " hold and nothing preempts; lower their min_replicas first (corral "
                         "serve update NAME --min-replicas N), or keep at least " +
                         GuaranteeGpus(held) + " GPUs");
}

}  // namespace corral::head
