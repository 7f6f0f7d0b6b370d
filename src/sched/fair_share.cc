#include "sched/fair_share.h"

#include <algorithm>
#include <cmath>

namespace corral::sched {

void QueueBook::Set(const QueueConfig& config) {
  int32_t q = Id(config.name);
  queues_[q].config = config;
}

DurationMs QueueBook::MaxWait(int32_t q) const {
  for (; q >= 0; q = queues_[q].parent) {
    if (queues_[q].config.max_wait_ms > 0) return queues_[q].config.max_wait_ms;
  }
  return 0;
}

int32_t QueueBook::FindId(const std::string& name) const {
  auto it = ids_.find(name);
  return it == ids_.end() ? -1 : it->second;
}

int32_t QueueBook::Id(const std::string& name) {
  auto it = ids_.find(name);
  if (it != ids_.end()) return it->second;
  int32_t parent = -1;
  size_t slash = name.rfind('/');
  if (slash != std::string::npos && slash > 0) parent = Id(name.substr(0, slash));
  int32_t q = static_cast<int32_t>(queues_.size());
  queues_.emplace_back();
  queues_[q].config.name = name;
  queues_[q].parent = parent;
  ids_[name] = q;
  return q;
}

int32_t QueueBook::UserId(int32_t q, const std::string& user) {
  Queue& queue = queues_[q];
  auto [it, added] = queue.user_ids.emplace(user, static_cast<int32_t>(queue.users.size()));
  if (added) queue.users.emplace_back();
  return it->second;
}

void QueueBook::Charge(int32_t q, int32_t user, int64_t gpu_milli, int64_t cpu, int64_t mem,
                       int sign, bool interactive) {
  if (user >= 0) {
    Usage& u = queues_[q].users[user];
    u.gpus += sign * gpu_milli;
    if (interactive) u.interactive += sign * gpu_milli;
    u.cpu += sign * cpu;
    u.mem += sign * mem;
  }
  for (int32_t a = q; a >= 0; a = queues_[a].parent) {
    queues_[a].gpus += sign * gpu_milli;
    queues_[a].cpu += sign * cpu;
    queues_[a].mem += sign * mem;
  }
}

void QueueBook::Integrate(Usage& u, double decay, double frac_new) {
  // Usage is kept in units of "allocation * tau": a constant allocation a converges to a.
  // With decay d over the interval, the exact integral of a constant a adds a * (1 - d).
  // In GPUs: exact for whole GPUs (a multiple of 1000 over 2000 is a multiple of 1/2).
  double g = static_cast<double>(u.last_gpus + u.gpus) / (2.0 * kGpuMilli);
  double c = 0.5 * static_cast<double>(u.last_cpu + u.cpu);
  double m = 0.5 * static_cast<double>(u.last_mem + u.mem);
  u.u_gpus = u.u_gpus * decay + g * frac_new;
  u.u_cpu = u.u_cpu * decay + c * frac_new;
  u.u_mem = u.u_mem * decay + m * frac_new;
  u.last_gpus = u.gpus;
  u.last_cpu = u.cpu;
  u.last_mem = u.mem;
}

void QueueBook::Advance(TimeMs now, int64_t cluster_gpus, int64_t cluster_cpu,
                        int64_t cluster_mem) {
  cpu_per_gpu_ = cluster_gpus > 0 ? static_cast<double>(cluster_cpu) / cluster_gpus : 0;
  mem_per_gpu_ = cluster_gpus > 0 ? static_cast<double>(cluster_mem) / cluster_gpus : 0;
  if (!advanced_) {
    advanced_ = true;
    last_advance_ = now;
  }
  DurationMs dt = std::max<DurationMs>(0, now - last_advance_);
  last_advance_ = std::max(last_advance_, now);
  double decay = 1.0, frac_new = 0.0;
  if (half_life_ms_ > 0 && dt > 0) {
    decay = std::exp2(-static_cast<double>(dt) / static_cast<double>(half_life_ms_));
    frac_new = 1.0 - decay;
  }
  for (Queue& q : queues_) {
    Integrate(q, decay, frac_new);
    for (Usage& u : q.users) Integrate(u, decay, frac_new);
  }
}

bool QueueBook::AddPast(int32_t q, int32_t user, int64_t gpu_milli, int64_t cpu, int64_t mem,
                        TimeMs from, TimeMs to, TimeMs now) {
  // The exact integral of a constant allocation a over [from, to], in units of a * tau and
  // decayed to now: a * (2^-((now - to) / h) - 2^-((now - from) / h)); without a half-life
  // usage is only the current allocation.
  if (half_life_ms_ <= 0 || to <= from) return false;
  auto decay = [&](TimeMs t) {
    return std::exp2(-static_cast<double>(now - t) / static_cast<double>(half_life_ms_));
  };
  double w = decay(to) - decay(from);
  auto add = [&](Usage& u) {
    u.u_gpus += static_cast<double>(gpu_milli) / kGpuMilli * w;
    u.u_cpu += static_cast<double>(cpu) * w;
    u.u_mem += static_cast<double>(mem) * w;
  };
  if (user >= 0) add(queues_[q].users[user]);
  for (int32_t a = q; a >= 0; a = queues_[a].parent) add(queues_[a]);
  return true;
}

void QueueBook::AnchorAt(TimeMs now) {
  advanced_ = true;
  last_advance_ = now;
  auto anchor = [](Usage& u) {
    u.last_gpus = u.gpus;
    u.last_cpu = u.cpu;
    u.last_mem = u.mem;
  };
  for (Queue& queue : queues_) {
    anchor(queue);
    for (Usage& u : queue.users) anchor(u);
  }
}

int64_t QueueBook::InteractiveMilli(int32_t q, int32_t user) const {
  return user >= 0 && user < static_cast<int32_t>(queues_[q].users.size())
             ? queues_[q].users[user].interactive
             : 0;
}

bool QueueBook::WithinInteractiveCap(int32_t q, int32_t user, int64_t gpu_milli) const {
  const int32_t cap = queues_[q].config.max_interactive_gpus_per_user;
  return cap <= 0 || InteractiveMilli(q, user) + gpu_milli <= int64_t{cap} * kGpuMilli;
}

bool QueueBook::WithinLimit(int32_t q, int64_t gpus) const { return LimitingQueue(q, gpus) < 0; }

int32_t QueueBook::LimitingQueue(int32_t q, int64_t gpus) const {
  for (int32_t a = q; a >= 0; a = queues_[a].parent) {
    const Queue& queue = queues_[a];
    if (queue.config.limit_gpus >= 0 &&
        queue.gpus + gpus * kGpuMilli > int64_t{queue.config.limit_gpus} * kGpuMilli) {
      return a;
    }
  }
  return -1;
}

int64_t QueueBook::EffectiveLimit(int32_t q) const {
  int64_t limit = -1;
  for (int32_t a = q; a >= 0; a = queues_[a].parent) {
    int64_t l = queues_[a].config.limit_gpus;
    if (l >= 0 && (limit < 0 || l < limit)) limit = l;
  }
  return limit;
}

double QueueBook::Dominant(const Usage& u, double entitlement) const {
  double gpu = (static_cast<double>(u.gpus) / kGpuMilli + u.u_gpus) / entitlement;
  double share = gpu;
  if (cpu_per_gpu_ > 0) {
    share = std::max(share, (static_cast<double>(u.cpu) + u.u_cpu) / (entitlement * cpu_per_gpu_));
  }
  if (mem_per_gpu_ > 0) {
    share = std::max(share, (static_cast<double>(u.mem) + u.u_mem) / (entitlement * mem_per_gpu_));
  }
  return share;
}

double QueueBook::Share(int32_t q) const {
  const Queue& queue = queues_[q];
  double weight = queue.config.weight > 0 ? queue.config.weight : 1.0;
  double entitlement = std::max(1, queue.config.quota_gpus);
  return Dominant(queue, entitlement) / weight;
}

double QueueBook::UserShare(int32_t q, int32_t user) const {
  return Dominant(queues_[q].users[user], 1.0);
}

bool QueueBook::Within(int32_t q, int32_t a) const {
  for (; q >= 0; q = queues_[q].parent) {
    if (q == a) return true;
  }
  return false;
}

int32_t QueueBook::NearestQuotaAncestor(int32_t q) const {
  for (int32_t a = queues_[q].parent; a >= 0; a = queues_[a].parent) {
    if (queues_[a].config.quota_gpus > 0) return a;
  }
  return -1;
}

void QueueBook::QuotaLevels(int32_t q, std::vector<int32_t>* out) const {
  out->clear();
  out->push_back(q);
  for (int32_t a = queues_[q].parent; a >= 0; a = queues_[a].parent) {
    if (queues_[a].config.quota_gpus > 0) out->push_back(a);
  }
}

QueueBook::Meet QueueBook::QuotaMeet(int32_t taker, int32_t holder) const {
  Meet m;
  if (taker == holder) return {taker, holder, 0};
  if (NearestQuotaAncestor(taker) < 0 && NearestQuotaAncestor(holder) < 0) {
    return {taker, holder, 0};  // no shared quota above either: flat
  }
  std::vector<int32_t> lt, lh;
  QuotaLevels(taker, &lt);
  QuotaLevels(holder, &lh);
  for (size_t i = 0; i < lh.size(); ++i) {
    auto it = std::find(lt.begin(), lt.end(), lh[i]);
    if (it == lt.end()) continue;
    size_t k = static_cast<size_t>(it - lt.begin());
    // The common level itself stands for a side that is that queue (a parent's own jobs).
    m.holder = i > 0 ? lh[i - 1] : lh[i];
    m.taker = k > 0 ? lt[k - 1] : lt[k];
    m.taker_depth = static_cast<int32_t>(k > 0 ? k - 1 : k);
    return m;
  }
  return {lt.back(), lh.back(), static_cast<int32_t>(lt.size() - 1)};
}

int QueueBook::QuotaTier(int32_t q) const {
  if (BelowQuota(q)) return 0;
  for (int32_t a = queues_[q].parent; a >= 0; a = queues_[a].parent) {
    if (queues_[a].config.quota_gpus > 0 && BelowQuota(a)) return 1;
  }
  return 2;
}

double QueueBook::FairPath(int32_t q, std::vector<double>* deeper) const {
  deeper->clear();
  int32_t top = q;
  for (int32_t a = queues_[q].parent; a >= 0; a = queues_[a].parent) {
    if (queues_[a].config.quota_gpus > 0) top = a;
  }
  if (top == q) return Share(q);
  // From the top down: each level's id, then the share of its child on the way to q.
  std::vector<int32_t> levels;
  QuotaLevels(q, &levels);
  for (size_t i = levels.size() - 1; i > 0; --i) {
    deeper->push_back(static_cast<double>(levels[i]));
    deeper->push_back(Share(levels[i - 1]));
  }
  return Share(top);
}

}  // namespace corral::sched
