#include "sim/whatif.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <set>
#include <tuple>

namespace corral::sim {

namespace {

// A recorded job's GPUs: each replica's share rounded up to whole GPUs, as the scheduler
// counts them.
int32_t WholeGpus(const JobSpec& s) {
  int64_t per = (s.per_replica.gpu_milli + kGpuMilli - 1) / kGpuMilli;
  return static_cast<int32_t>(per * std::max(1, s.replicas));
}

// What of a recorded spec the replay submits: scheduling inputs only. Dependencies name the
// recorded ids and arrays' limits their recorded elements; the replay places resources, it
// does not re-run workflows.
std::shared_ptr<const JobSpec> ReplaySpec(const JobSpec& recorded) {
  auto s = std::make_shared<JobSpec>(recorded);
  s->command.clear();
  s->env.clear();
  s->workdir.clear();
  s->container = {};
  s->dependencies.clear();
  s->array.clear();
  s->hold = false;
  s->batch = false;
  s->interactive = false;
  s->notebook = false;
  return s;
}

RegisterRequest AsRegistration(const Node& n) {
  RegisterRequest r;
  r.name = n.name;
  r.address = n.address;
  r.cpu_milli = n.cpu_milli;
  r.memory_mb = n.memory_mb;
  r.gpus = n.gpus;
  r.labels = n.labels;
  r.port_lo = n.port_lo;
  r.port_hi = n.port_hi;
  return r;
}

DurationMs Median(std::vector<DurationMs> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

Result<Replay> ReplayFromHistory(const head::History& h, RunningAs running) {
  Replay out;
  if (h.nodes.empty()) return InvalidArgument("the history has no nodes to replay on");
  struct Row {
    TraceJob job;
    RecordedOutcome rec;
    bool needs_duration = false;  // never ran: filled in below
  };
  std::vector<Row> rows;
  std::map<std::string, std::vector<DurationMs>> ended_by_user;
  std::vector<DurationMs> ended_all;
  TimeMs origin = INT64_MAX;
  for (const Job& j : h.jobs) {
    bool ran =
        std::any_of(j.runs.begin(), j.runs.end(), [](const Run& r) { return r.scheduled_at > 0; });
    if (!ran && IsTerminal(j.state)) {
      ++out.left_out;  // cancelled (or its dependency failed) before it held anything
      continue;
    }
    Row row;
    TraceJob& t = row.job;
    t.id = std::to_string(j.id);
    t.epoch_ms = j.submitted_at;
    t.num_gpus = WholeGpus(j.spec);
    t.queue = j.spec.queue;
    t.user = j.owner;
    t.name = j.spec.name;
    t.time_limit_ms = j.spec.time_limit_ms;
    t.line = static_cast<int64_t>(j.id);
    t.spec = ReplaySpec(j.spec);
    row.rec.id = j.id;
    for (const Run& r : j.runs) {
      if (r.scheduled_at <= 0) continue;
      if (row.rec.first_start < 0) row.rec.first_start = r.scheduled_at;
      bool over = IsRunOver(r.state) && r.ended_at > 0;
      DurationMs held = std::max<DurationMs>(0, (over ? r.ended_at : h.now) - r.scheduled_at);
      if (!over && running == RunningAs::kLimit) held = std::max(held, j.spec.time_limit_ms);
      t.duration_ms += held;
      row.rec.gpu_ms += held * t.num_gpus;
    }
    if (IsTerminal(j.state) && j.ended_at > 0) {
      row.rec.end = j.ended_at;
      ended_by_user[j.owner].push_back(t.duration_ms);
      ended_all.push_back(t.duration_ms);
    }
    row.needs_duration = !ran;
    origin = std::min(origin, j.submitted_at);
    rows.push_back(std::move(row));
  }
  DurationMs median_all = Median(ended_all);
  for (Row& row : rows) {
    TraceJob& t = row.job;
    if (row.needs_duration) {
      auto mine = ended_by_user.find(t.user);
      t.duration_ms = t.time_limit_ms > 0           ? t.time_limit_ms
                      : mine != ended_by_user.end() ? Median(mine->second)
                                                    : median_all;
    }
    t.duration_ms = std::max<DurationMs>(1, t.duration_ms);
    t.submit_ms = t.epoch_ms - origin;
    if (row.rec.first_start >= 0) row.rec.first_start -= origin;
    if (row.rec.end >= 0) row.rec.end -= origin;
  }
  std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
    return std::tie(a.job.submit_ms, a.job.line) < std::tie(b.job.submit_ms, b.job.line);
  });
  for (Row& row : rows) {
    out.jobs.push_back(std::move(row.job));
    out.recorded.push_back(row.rec);
  }
  out.origin = rows.empty() ? h.from : origin;
  SimConfig& c = out.config;
  c.policy = h.policy;
  c.min_runtime_before_preempt_ms = h.min_runtime_before_preempt_ms;
  if (h.fair_share_half_life_ms != 0) c.fair_share_half_life_ms = h.fair_share_half_life_ms;
  for (const Node& n : h.nodes) c.cluster.registered.push_back(AsRegistration(n));
  c.queues = h.queues;
  return out;
}

Status ParseSetQuota(const std::string& text, WhatIfChange* change) {
  auto eq = text.rfind('=');
  std::string queue = eq == std::string::npos ? "" : text.substr(0, eq);
  std::string n = eq == std::string::npos ? "" : text.substr(eq + 1);
  int32_t gpus = -1;
  auto [end, ec] = std::from_chars(n.data(), n.data() + n.size(), gpus);
  if (queue.empty() || n.empty() || ec != std::errc{} || end != n.data() + n.size() || gpus < 0) {
    return InvalidArgument("flag --set-quota: got \"" + text +
                           "\", want QUEUE=GPUS with GPUS a whole number >= 0");
  }
  change->quotas[queue] = gpus;
  return Status::Ok();
}

Result<SimConfig> ChangedConfig(const Replay& replay, const WhatIfChange& change) {
  SimConfig c = replay.config;
  std::set<std::string> used;
  for (const TraceJob& t : replay.jobs) used.insert(t.queue);
  for (const auto& [queue, gpus] : change.quotas) {
    auto it = std::find_if(c.queues.begin(), c.queues.end(),
                           [&](const QueueConfig& q) { return q.name == queue; });
    if (it != c.queues.end()) {
      it->quota_gpus = gpus;
      continue;
    }
    if (!used.count(queue)) {
      std::string known;
      for (const QueueConfig& q : c.queues) used.insert(q.name);
      for (const std::string& q : used) known += (known.empty() ? "" : ", ") + q;
      return InvalidArgument("flag --set-quota: no queue '" + queue +
                             "' in the history (queues: " + (known.empty() ? "none" : known) + ")");
    }
    QueueConfig q;
    q.name = queue;
    q.quota_gpus = gpus;
    c.queues.push_back(q);
  }
  if (change.policy) c.policy = *change.policy;
  if (change.nodes) {
    if (*change.nodes < 1) return InvalidArgument("flag --nodes: want at least 1 node");
    if (c.cluster.registered.empty()) {
      return InvalidArgument("flag --nodes: the history has no node to copy the shape of");
    }
    // The most common node shape (by GPU count; the first node of it by name).
    std::map<size_t, int32_t> count;
    for (const RegisterRequest& r : c.cluster.registered) ++count[r.gpus.size()];
    size_t gpus = std::max_element(count.begin(), count.end(), [](auto& a, auto& b) {
                    return a.second < b.second;
                  })->first;
    RegisterRequest shape =
        *std::find_if(c.cluster.registered.begin(), c.cluster.registered.end(),
                      [&](const RegisterRequest& r) { return r.gpus.size() == gpus; });
    c.cluster.registered.clear();
    for (int32_t i = 0; i < *change.nodes; ++i) {
      RegisterRequest r = shape;
      char name[32];
      std::snprintf(name, sizeof name, "whatif-%04d", i);
      r.name = name;
      r.address = r.name + ":7071";
      c.cluster.registered.push_back(std::move(r));
    }
  }
  return c;
}

double Spearman(const std::vector<double>& a, const std::vector<double>& b) {
  auto ranks = [](const std::vector<double>& v) {
    std::vector<size_t> order(v.size());
    for (size_t i = 0; i < v.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return v[x] < v[y]; });
    std::vector<double> r(v.size());
    for (size_t i = 0; i < order.size();) {
      size_t j = i;
      while (j + 1 < order.size() && v[order[j + 1]] == v[order[i]]) ++j;
      double avg = (static_cast<double>(i) + static_cast<double>(j)) / 2 + 1;
      for (size_t k = i; k <= j; ++k) r[order[k]] = avg;
      i = j + 1;
    }
    return r;
  };
  if (a.size() != b.size() || a.size() < 2) return 0;
  std::vector<double> ra = ranks(a), rb = ranks(b);
  double n = static_cast<double>(a.size());
  double ma = 0, mb = 0;
  for (size_t i = 0; i < ra.size(); ++i) ma += ra[i] / n, mb += rb[i] / n;
  double cov = 0, va = 0, vb = 0;
  for (size_t i = 0; i < ra.size(); ++i) {
    cov += (ra[i] - ma) * (rb[i] - mb);
    va += (ra[i] - ma) * (ra[i] - ma);
    vb += (rb[i] - mb) * (rb[i] - mb);
  }
  if (va <= 0 || vb <= 0) return 0;
  return cov / std::sqrt(va * vb);
}

namespace {

// One scenario's first start, end and GPU time per trace row.
struct Scenario {
  std::vector<TimeMs> first_start, end;
  std::vector<int64_t> gpu_ms;
};

Scenario FromRecording(const Replay& r) {
  Scenario s;
  for (const RecordedOutcome& o : r.recorded) {
    s.first_start.push_back(o.first_start);
    s.end.push_back(o.end);
    s.gpu_ms.push_back(o.gpu_ms);
  }
  return s;
}

Scenario FromSimulation(const Replay& r, const SimResult& sim) {
  Scenario s;
  s.gpu_ms.assign(r.jobs.size(), 0);
  for (size_t i = 0; i < r.jobs.size(); ++i) {
    const JobOutcome& o = sim.jobs[i];
    s.first_start.push_back(o.rejected ? -1 : o.first_start);
    s.end.push_back(o.rejected ? -1 : o.end);
  }
  for (const RunRecord& run : sim.runs) {
    if (run.end > run.start) s.gpu_ms[run.job] += (run.end - run.start) * run.gpus;
  }
  return s;
}

// Per group (`key` of a trace row): the measured jobs' averages and the GPU share.
std::map<std::string, GroupNumbers> Numbers(const Replay& r, const Scenario& s,
                                            const std::vector<bool>& measured,
                                            const std::string& (*key)(const TraceJob&)) {
  struct Sum {
    int64_t waits = 0, jcts = 0;
    double wait_ms = 0, jct_ms = 0, gpu_ms = 0;
  };
  std::map<std::string, Sum> sums;
  double total_gpu_ms = 0;
  for (size_t i = 0; i < r.jobs.size(); ++i) {
    Sum& g = sums[key(r.jobs[i])];
    g.gpu_ms += static_cast<double>(s.gpu_ms[i]);
    total_gpu_ms += static_cast<double>(s.gpu_ms[i]);
    if (!measured[i]) continue;
    TimeMs submit = r.jobs[i].submit_ms;
    if (s.first_start[i] >= 0)
      ++g.waits, g.wait_ms += static_cast<double>(s.first_start[i] - submit);
    if (s.end[i] >= 0) ++g.jcts, g.jct_ms += static_cast<double>(s.end[i] - submit);
  }
  std::map<std::string, GroupNumbers> out;
  for (const auto& [name, g] : sums) {
    GroupNumbers& n = out[name];
    n.jobs = g.jcts;
    n.avg_wait_s = g.waits > 0 ? g.wait_ms / static_cast<double>(g.waits) / 1000 : 0;
    n.avg_jct_s = g.jcts > 0 ? g.jct_ms / static_cast<double>(g.jcts) / 1000 : 0;
    n.gpu_share = total_gpu_ms > 0 ? g.gpu_ms / total_gpu_ms : 0;
  }
  return out;
}

const std::string& QueueOf(const TraceJob& t) { return t.queue; }
const std::string& UserOf(const TraceJob& t) { return t.user; }

std::vector<GroupRow> Rows(const Replay& r, const std::vector<Scenario>& scenarios,
                           const std::vector<bool>& measured,
                           const std::string& (*key)(const TraceJob&)) {
  std::vector<std::map<std::string, GroupNumbers>> per;
  for (const Scenario& s : scenarios) per.push_back(Numbers(r, s, measured, key));
  std::vector<GroupRow> rows;
  for (const auto& [name, recorded] : per[0]) {
    GroupRow row;
    row.name = name;
    row.recorded = recorded;
    row.replayed = per[1][name];
    if (per.size() > 2) row.changed = per[2][name];
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace

WhatIfReport BuildReport(const Replay& replay, const SimResult& replayed,
                         const SimResult* changed) {
  WhatIfReport out;
  out.jobs = static_cast<int64_t>(replay.jobs.size());
  out.left_out = replay.left_out;
  out.has_change = changed != nullptr;
  std::vector<Scenario> s = {FromRecording(replay), FromSimulation(replay, replayed)};
  if (changed != nullptr) s.push_back(FromSimulation(replay, *changed));
  std::vector<bool> measured(replay.jobs.size());
  std::vector<double> recorded_start, replayed_start;
  for (size_t i = 0; i < replay.jobs.size(); ++i) {
    const RecordedOutcome& o = replay.recorded[i];
    measured[i] = o.first_start >= 0 && o.end >= 0;
    out.measured_jobs += measured[i];
    if (o.first_start >= 0 && s[1].first_start[i] >= 0) {
      recorded_start.push_back(static_cast<double>(o.first_start));
      replayed_start.push_back(static_cast<double>(s[1].first_start[i]));
    }
  }
  out.ranked_jobs = static_cast<int64_t>(recorded_start.size());
  out.spearman = Spearman(recorded_start, replayed_start);
  out.queues = Rows(replay, s, measured, QueueOf);
  out.users = Rows(replay, s, measured, UserOf);
  return out;
}

namespace {

Json NumbersJson(const GroupNumbers& n) {
  return Json{{"jobs", n.jobs},
              {"avg_wait_seconds", n.avg_wait_s},
              {"avg_jct_seconds", n.avg_jct_s},
              {"gpu_share", n.gpu_share}};
}

Json RowsJson(const std::vector<GroupRow>& rows, bool has_change) {
  Json out = Json::array();
  for (const GroupRow& r : rows) {
    Json j{{"name", r.name},
           {"recorded", NumbersJson(r.recorded)},
           {"replayed", NumbersJson(r.replayed)}};
    if (has_change) j["changed"] = NumbersJson(r.changed);
    out.push_back(std::move(j));
  }
  return out;
}

}  // namespace

Json ToJson(const WhatIfReport& r) {
  return Json{{"spearman", r.spearman},
              {"ranked_jobs", r.ranked_jobs},
              {"jobs", r.jobs},
              {"measured_jobs", r.measured_jobs},
              {"left_out", r.left_out},
              {"queues", RowsJson(r.queues, r.has_change)},
              {"users", RowsJson(r.users, r.has_change)}};
}

}  // namespace corral::sim
