#include "sim/checker.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <sstream>
#include <tuple>

#include "sim/report.h"
#include "sim/simulator.h"

namespace corral::sim {

namespace {

struct Row {
  int64_t line = 0;
  std::string job;
  TimeMs start = 0;
  TimeMs end = 0;
  int64_t gpus = 0;  // milli-GPUs
  std::map<std::string, int64_t> nodes;
};

// "12.345" -> 12345 ms; exactly three decimals as RunsCsv writes them.
bool ParseMs(const std::string& s, TimeMs* out) {
  size_t dot = s.find('.');
  if (dot == std::string::npos || s.size() - dot != 4) return false;
  int64_t whole = 0, frac = 0;
  auto a = std::from_chars(s.data(), s.data() + dot, whole);
  auto b = std::from_chars(s.data() + dot + 1, s.data() + s.size(), frac);
  if (a.ec != std::errc() || a.ptr != s.data() + dot || b.ec != std::errc() ||
      b.ptr != s.data() + s.size()) {
    return false;
  }
  *out = whole * 1000 + (whole < 0 || s[0] == '-' ? -frac : frac);
  return true;
}

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  std::istringstream in(s);
  while (std::getline(in, cur, sep)) out.push_back(cur);
  if (!s.empty() && s.back() == sep) out.emplace_back();
  return out;
}

// "2" -> 2000, "0.250" -> 250.
bool ParseMilliGpus(const std::string& s, int64_t* out) {
  size_t dot = s.find('.');
  int64_t whole = 0, frac = 0;
  auto a = std::from_chars(s.data(), s.data() + std::min(dot, s.size()), whole);
  if (a.ec != std::errc() || a.ptr != s.data() + std::min(dot, s.size()) || whole < 0) return false;
  if (dot != std::string::npos) {
    if (s.size() - dot != 4) return false;
    auto b = std::from_chars(s.data() + dot + 1, s.data() + s.size(), frac);
    if (b.ec != std::errc() || b.ptr != s.data() + s.size()) return false;
  }
  *out = whole * kGpuMilli + frac;
  return true;
}

std::string Gpus(int64_t milli) { return FormatMilliGpus(milli); }

Status Err(int64_t line, const std::string& what) {
  return Internal("runs line " + std::to_string(line) + ": " + what);
}

// The runs file's rows, each checked against the trace: its GPUs add up over its nodes, it ends
// after it starts, after its job's submit, holding what the job asks for.
Result<std::vector<Row>> ParseRunRows(const std::vector<TraceJob>& jobs,
                                      const std::map<std::string, size_t>& by_id,
                                      const std::string& runs_csv, const CheckOptions& o) {
  std::istringstream in(runs_csv);
  std::string text;
  int64_t line = 0;
  std::vector<Row> rows;
  while (std::getline(in, text)) {
    ++line;
    if (line == 1) {
      if (text != "job_id,start,end,gpus,nodes") return Err(1, "bad header '" + text + "'");
      continue;
    }
    if (text.empty()) continue;
    std::vector<std::string> f = Split(text, ',');
    if (f.size() != 5) return Err(line, "expected 5 fields");
    Row r;
    r.line = line;
    r.job = f[0];
    if (!ParseMs(f[1], &r.start) || !ParseMs(f[2], &r.end) || !ParseMilliGpus(f[3], &r.gpus)) {
      return Err(line, "unparsable start, end or gpus");
    }
    int64_t sum = 0;
    for (const std::string& part : Split(f[4], ';')) {
      size_t colon = part.rfind(':');
      int64_t n = 0;
      if (colon == std::string::npos || !ParseMilliGpus(part.substr(colon + 1), &n) || n <= 0) {
        return Err(line, "bad node entry '" + part + "'");
      }
      r.nodes[part.substr(0, colon)] += n;
      sum += n;
    }
    if (sum != r.gpus)
      return Err(line, "node GPU counts add to " + Gpus(sum) + ", not gpus=" + Gpus(r.gpus));
    if (r.end < r.start) return Err(line, "ends before it starts");
    auto it = by_id.find(r.job);
    if (it == by_id.end()) return Err(line, "job '" + r.job + "' is not in the trace");
    const TraceJob& j = jobs[it->second];
    if (r.gpus != HeldMilliGpus(j, o.round_shares_up)) {
      return Err(line, "job " + r.job + " holds " + Gpus(r.gpus) + " GPUs; the trace asks for " +
                           Gpus(HeldMilliGpus(j, o.round_shares_up)));
    }
    if (r.start < j.submit_ms) return Err(line, "job " + r.job + " runs before its submit");
    rows.push_back(std::move(r));
  }
  return rows;
}

// Capacity: sweep over run boundaries; a run ending at t frees before one starting at t.
Status CheckCapacity(const std::vector<Row>& rows, const CheckOptions& o) {
  std::vector<std::tuple<TimeMs, int, size_t>> edges;  // (time, +1 start / -1 end, row)
  for (size_t i = 0; i < rows.size(); ++i) {
    edges.emplace_back(rows[i].start, 1, i);
    edges.emplace_back(rows[i].end, -1, i);
  }
  std::sort(edges.begin(), edges.end());
  std::map<std::string, int64_t> busy;
  int64_t total = 0;
  const int64_t per_node = int64_t{o.gpus_per_node} * kGpuMilli;
  const int64_t cap = static_cast<int64_t>(o.nodes) * per_node;
  for (const auto& [t, kind, i] : edges) {
    for (const auto& [node, n] : rows[i].nodes) {
      busy[node] += kind * n;
      if (busy[node] > per_node) {
        return Err(rows[i].line, "node " + node + " holds " + Gpus(busy[node]) + " GPUs at " +
                                     std::to_string(t) + " ms; it has " +
                                     std::to_string(o.gpus_per_node));
      }
    }
    total += kind * rows[i].gpus;
    if (total > cap) {
      return Err(rows[i].line, Gpus(total) + " GPUs busy at " + std::to_string(t) +
                                   " ms; the cluster has " + Gpus(cap));
    }
  }
  if (static_cast<int64_t>(busy.size()) > o.nodes) {
    return Internal("runs use " + std::to_string(busy.size()) +
                    " distinct nodes; the cluster has " + std::to_string(o.nodes));
  }
  return Status::Ok();
}

// Service of one job over its runs, in start order: no two overlap, and (exact service) the
// last one ends its duration, the earlier ones' work counted up to their last checkpoint.
Status CheckServiceOf(const TraceJob& j, std::vector<const Row*>& runs, const CheckOptions& o) {
  std::stable_sort(runs.begin(), runs.end(),
                   [](const Row* a, const Row* b) { return a->start < b->start; });
  DurationMs progress = 0;
  for (size_t k = 0; k < runs.size(); ++k) {
    const Row& r = *runs[k];
    if (k > 0 && r.start < runs[k - 1]->end) {
      return Err(r.line, "job " + j.id + " overlaps its previous run");
    }
    if (!o.exact_service) continue;
    DurationMs len = r.end - r.start;
    DurationMs overhead = k > 0 ? o.restart_overhead_ms : 0;
    if (k + 1 == runs.size()) {
      if (len - overhead != j.duration_ms - progress) {
        return Err(r.line, "job " + j.id + " gets " + std::to_string(progress + len - overhead) +
                               " ms of service; its duration is " + std::to_string(j.duration_ms) +
                               " ms");
      }
    } else {
      DurationMs useful = std::max<DurationMs>(0, len - o.preempt_grace_ms - overhead);
      DurationMs t = std::min(j.duration_ms, progress + useful);
      if (o.checkpoint_interval_ms > 0) {
        t = std::max(progress, t / o.checkpoint_interval_ms * o.checkpoint_interval_ms);
      }
      if (len < o.preempt_grace_ms) {
        return Err(r.line, "preempted run of job " + j.id + " is shorter than the grace");
      }
      progress = t;
    }
  }
  return Status::Ok();
}

}  // namespace

Status CheckRuns(const std::vector<TraceJob>& jobs, const std::string& runs_csv,
                 const CheckOptions& o) {
  std::map<std::string, size_t> by_id;
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (!by_id.emplace(jobs[i].id, i).second) {
      return InvalidArgument("trace job id '" + jobs[i].id + "' is not unique");
    }
  }
  Result<std::vector<Row>> rows = ParseRunRows(jobs, by_id, runs_csv, o);
  if (!rows.ok()) return rows.status();
  CORRAL_RETURN_IF_ERROR(CheckCapacity(*rows, o));
  std::map<std::string, std::vector<const Row*>> per_job;
  for (const Row& r : *rows) per_job[r.job].push_back(&r);
  for (const TraceJob& j : jobs) {
    auto it = per_job.find(j.id);
    if (it == per_job.end()) {
      if (o.rejected.count(j.id)) continue;
      return Internal("job " + j.id + " (trace line " + std::to_string(j.line) + ") never ran");
    }
    if (o.rejected.count(j.id)) return Internal("rejected job " + j.id + " ran");
    CORRAL_RETURN_IF_ERROR(CheckServiceOf(j, it->second, o));
  }
  return Status::Ok();
}

}  // namespace corral::sim
