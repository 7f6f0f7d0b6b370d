#include "sim/checker.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <sstream>
#include <tuple>

namespace corral::sim {

namespace {

struct Row {
  int64_t line = 0;
  std::string job;
  TimeMs start = 0;
  TimeMs end = 0;
  int32_t gpus = 0;
  std::map<std::string, int32_t> nodes;
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

Status Err(int64_t line, const std::string& what) {
  return Internal("runs line " + std::to_string(line) + ": " + what);
}

}  // namespace

Status CheckRuns(const std::vector<TraceJob>& jobs, const std::string& runs_csv,
                 const CheckOptions& o) {
  std::istringstream in(runs_csv);
  std::string text;
  int64_t line = 0;
  std::vector<Row> rows;
  std::map<std::string, size_t> by_id;
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (!by_id.emplace(jobs[i].id, i).second) {
      return InvalidArgument("trace job id '" + jobs[i].id + "' is not unique");
    }
  }
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
    int64_t g = 0;
    if (!ParseMs(f[1], &r.start) || !ParseMs(f[2], &r.end) ||
        std::from_chars(f[3].data(), f[3].data() + f[3].size(), g).ec != std::errc()) {
      return Err(line, "unparsable start, end or gpus");
    }
    r.gpus = static_cast<int32_t>(g);
    int32_t sum = 0;
    for (const std::string& part : Split(f[4], ';')) {
      size_t colon = part.rfind(':');
      int32_t n = 0;
      if (colon == std::string::npos ||
          std::from_chars(part.data() + colon + 1, part.data() + part.size(), n).ec !=
              std::errc() ||
          n <= 0) {
        return Err(line, "bad node entry '" + part + "'");
      }
      r.nodes[part.substr(0, colon)] += n;
      sum += n;
    }
    if (sum != r.gpus)
      return Err(line, "node GPU counts add to " + std::to_string(sum) +
                           ", not gpus=" + std::to_string(r.gpus));
    if (r.end < r.start) return Err(line, "ends before it starts");
    auto it = by_id.find(r.job);
    if (it == by_id.end()) return Err(line, "job '" + r.job + "' is not in the trace");
    const TraceJob& j = jobs[it->second];
    if (r.gpus != j.num_gpus) {
      return Err(line, "job " + r.job + " holds " + std::to_string(r.gpus) +
                           " GPUs; the trace asks for " + std::to_string(j.num_gpus));
    }
    if (r.start < j.submit_ms) return Err(line, "job " + r.job + " runs before its submit");
    rows.push_back(std::move(r));
  }

  // Capacity: sweep over run boundaries; a run ending at t frees before one starting at t.
  std::vector<std::tuple<TimeMs, int, size_t>> edges;  // (time, +1 start / -1 end, row)
  for (size_t i = 0; i < rows.size(); ++i) {
    edges.emplace_back(rows[i].start, 1, i);
    edges.emplace_back(rows[i].end, -1, i);
  }
  std::sort(edges.begin(), edges.end());
  std::map<std::string, int32_t> busy;
  int64_t total = 0;
  const int64_t cap = static_cast<int64_t>(o.nodes) * o.gpus_per_node;
  for (const auto& [t, kind, i] : edges) {
    for (const auto& [node, n] : rows[i].nodes) {
      busy[node] += kind * n;
      if (busy[node] > o.gpus_per_node) {
        return Err(rows[i].line, "node " + node + " holds " + std::to_string(busy[node]) +
                                     " GPUs at " + std::to_string(t) + " ms; it has " +
                                     std::to_string(o.gpus_per_node));
      }
    }
    total += kind * rows[i].gpus;
    if (total > cap) {
      return Err(rows[i].line, std::to_string(total) + " GPUs busy at " + std::to_string(t) +
                                   " ms; the cluster has " + std::to_string(cap));
    }
  }
  if (static_cast<int64_t>(busy.size()) > o.nodes) {
    return Internal("runs use " + std::to_string(busy.size()) +
                    " distinct nodes; the cluster has " + std::to_string(o.nodes));
  }

  // Service: per job, in start order.
  std::map<std::string, std::vector<const Row*>> per_job;
  for (const Row& r : rows) per_job[r.job].push_back(&r);
  for (const TraceJob& j : jobs) {
    auto it = per_job.find(j.id);
    if (it == per_job.end()) {
      if (o.rejected.count(j.id)) continue;
      return Internal("job " + j.id + " (trace line " + std::to_string(j.line) + ") never ran");
    }
    if (o.rejected.count(j.id)) return Internal("rejected job " + j.id + " ran");
    std::vector<const Row*>& runs = it->second;
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
                                 " ms of service; its duration is " +
                                 std::to_string(j.duration_ms) + " ms");
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
  }
  return Status::Ok();
}

}  // namespace corral::sim
