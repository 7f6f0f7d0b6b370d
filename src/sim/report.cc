#include "sim/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>
#include <tuple>

namespace corral::sim {

namespace {

double Percentile(const std::vector<double>& sorted, double p) {  // nearest rank
  if (sorted.empty()) return 0;
  size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(sorted.size())));
  rank = std::clamp<size_t>(rank, 1, sorted.size());
  return sorted[rank - 1];
}

std::string Num(double v, int decimals = 3) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string Escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '&')
      out += "&amp;";
    else if (c == '"')
      out += "&quot;";
    else
      out += c;
  }
  return out;
}

}  // namespace

std::string FormatSeconds(int64_t ms) {
  char buf[48];
  const char* sign = ms < 0 ? "-" : "";
  int64_t a = ms < 0 ? -ms : ms;
  std::snprintf(buf, sizeof buf, "%s%lld.%03lld", sign, static_cast<long long>(a / 1000),
                static_cast<long long>(a % 1000));
  return buf;
}

namespace {

// What Summarize gathers job by job before it sorts and averages.
struct SummaryJobFigures {
  double delay_sum = 0, jct_sum = 0, dur_sum = 0;
  TimeMs first_submit = INT64_MAX, last_end = INT64_MIN;
  std::map<std::string, std::pair<double, int64_t>> slow;  // queue -> (sum, count)
  std::vector<double> slowdowns, delays, total_waits;
};

void AddFinishedJob(const TraceJob& job, const JobOutcome& o, Summary& s, SummaryJobFigures& f) {
  ++s.jobs;
  double jct = static_cast<double>(o.end - job.submit_ms) / 1000.0;
  s.jcts.push_back(jct);
  f.jct_sum += jct;
  f.total_waits.push_back(std::max(0.0, jct - static_cast<double>(job.duration_ms) / 1000.0));
  f.dur_sum += static_cast<double>(job.duration_ms) / 1000.0;
  f.delays.push_back(static_cast<double>(o.first_start - job.submit_ms) / 1000.0);
  f.delay_sum += f.delays.back();
  f.first_submit = std::min(f.first_submit, job.submit_ms);
  f.last_end = std::max(f.last_end, o.end);
  s.preemptions += o.preemptions;
  s.lost_runs += o.lost_runs;
  s.timeouts += o.timeout ? 1 : 0;
  double dur = std::max(10.0, static_cast<double>(job.duration_ms) / 1000.0);
  auto& [sum, n] = f.slow[job.queue];
  sum += std::max(1.0, jct / dur);
  f.slowdowns.push_back(std::max(1.0, jct / dur));
  ++n;
}

// Averages and tails of the jobs' times (s.jobs > 0).
void SetTimeFigures(Summary& s, SummaryJobFigures& f) {
  std::sort(s.jcts.begin(), s.jcts.end());
  s.avg_jct = f.jct_sum / static_cast<double>(s.jobs);
  s.avg_queue_delay = f.delay_sum / static_cast<double>(s.jobs);
  s.avg_duration = f.dur_sum / static_cast<double>(s.jobs);
  s.p50_jct = Percentile(s.jcts, 50);
  s.p95_jct = Percentile(s.jcts, 95);
  s.p99_jct = Percentile(s.jcts, 99);
  std::sort(f.delays.begin(), f.delays.end());
  s.p99_queue_delay = Percentile(f.delays, 99);
  std::sort(f.total_waits.begin(), f.total_waits.end());
  s.p99_total_wait = Percentile(f.total_waits, 99);
  s.makespan = static_cast<double>(f.last_end - f.first_submit) / 1000.0;
  std::sort(f.slowdowns.begin(), f.slowdowns.end());
  s.p99_slowdown = Percentile(f.slowdowns, 99);
}

// GPU-seconds held by the runs of the jobs reported (a share counts its fraction).
double BusyGpuSeconds(const std::vector<TraceJob>& jobs, const SimResult& result,
                      TimeMs report_from) {
  double busy = 0;
  for (const RunRecord& r : result.runs) {
    if (jobs[r.job].submit_ms < report_from) continue;
    busy += static_cast<double>(r.end - r.start) / 1000.0 *
            (r.gpu_milli % kGpuMilli == 0 ? r.gpus : static_cast<double>(r.gpu_milli) / kGpuMilli);
  }
  return busy;
}

// Each queue's mean slowdown and Jain's index over them.
void SetQueueFairness(Summary& s, const SummaryJobFigures& f) {
  double sx = 0, sxx = 0;
  for (const auto& [q, p] : f.slow) {
    double x = p.first / static_cast<double>(p.second);
    s.queue_slowdown[q] = x;
    sx += x;
    sxx += x * x;
  }
  s.jain_fairness = f.slow.empty() || sxx == 0 ? 1.0 : sx * sx / (f.slow.size() * sxx);
}

}  // namespace

Summary Summarize(const std::string& policy, const std::vector<TraceJob>& jobs,
                  const SimResult& result, TimeMs report_from) {
  Summary s;
  s.policy = policy;
  s.total_gpus = result.total_gpus;
  s.schedule_calls = result.schedule_calls;
  SummaryJobFigures f;
  for (size_t i = 0; i < jobs.size(); ++i) {
    const JobOutcome& o = result.jobs[i];
    if (jobs[i].submit_ms < report_from) continue;
    if (o.rejected) {
      ++s.rejected;
      continue;
    }
    if (o.end >= 0) AddFinishedJob(jobs[i], o, s, f);
  }
  if (s.jobs > 0) SetTimeFigures(s, f);
  if (s.makespan > 0) {
    s.preemptions_per_hour = static_cast<double>(s.preemptions) / (s.makespan / 3600);
  }
  s.lost_gpu_hours = static_cast<double>(result.lost_gpu_ms) / 1000.0 / 3600.0;
  s.data = result.data;
  s.staging_gpu_hours = static_cast<double>(result.staging_gpu_ms) / 1000.0 / 3600.0;
  s.node_failures = result.node_failures;
  s.predicted_by_name = result.predicted_by_name;
  s.predicted_by_name_at_submit = result.predicted_by_name_at_submit;
  s.fragmented = FragmentedShare(result);
  if (s.makespan > 0 && s.total_gpus > 0) {
    s.utilization = BusyGpuSeconds(jobs, result, report_from) /
                    (static_cast<double>(s.total_gpus) * s.makespan);
  }
  SetQueueFairness(s, f);
  s.estimates = MeasureEstimateAccuracy(jobs, result, report_from);
  return s;
}

namespace {

double HitRatio(const DataStats& d) {
  return d.stage_ins > 0 ? static_cast<double>(d.hits) / static_cast<double>(d.stage_ins) : 0;
}
double MeanStagingS(const DataStats& d) {
  return d.staged_replicas > 0
             ? static_cast<double>(d.staging_ms) / 1000.0 / static_cast<double>(d.staged_replicas)
             : 0;
}
constexpr double kTiB = 1024.0 * 1024 * 1024 * 1024;

std::string DataJson(const Summary& s) {
  const DataStats& d = s.data;
  std::ostringstream o;
  o << "{\"stage_ins\": " << d.stage_ins << ", \"hit_ratio\": " << Num(HitRatio(d), 4)
    << ", \"fetches\": " << d.fetches
    << ", \"fetched_tib\": " << Num(static_cast<double>(d.fetched_bytes) / kTiB, 3)
    << ", \"evictions\": " << d.evictions << ", \"staged_replicas\": " << d.staged_replicas
    << ", \"mean_staging_s\": " << Num(MeanStagingS(d))
    << ", \"staging_gpu_hours\": " << Num(s.staging_gpu_hours) << "}";
  return o.str();
}

std::string DataLine(const Summary& s) {
  const DataStats& d = s.data;
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "%s data: %lld stage-ins, hit ratio %.3f, %lld fetches (%.2f TiB), %lld "
                "evictions, %lld replicas waited %.0f s on average, %.1f GPU-hours staging\n",
                s.policy.c_str(), static_cast<long long>(d.stage_ins), HitRatio(d),
                static_cast<long long>(d.fetches), static_cast<double>(d.fetched_bytes) / kTiB,
                static_cast<long long>(d.evictions), static_cast<long long>(d.staged_replicas),
                MeanStagingS(d), s.staging_gpu_hours);
  return buf;
}

}  // namespace

std::string SummaryJson(const Summary& s) {
  std::ostringstream o;
  o << "{\n";
  o << "  \"policy\": \"" << s.policy << "\",\n";
  o << "  \"trace_rows\": " << s.trace_rows << ",\n";
  o << "  \"bad_rows\": " << s.bad_rows << ",\n";
  o << "  \"jobs\": " << s.jobs << ",\n";
  o << "  \"rejected\": " << s.rejected << ",\n";
  o << "  \"gpus\": " << s.total_gpus << ",\n";
  o << "  \"fragmented\": " << Num(s.fragmented) << ",\n";
  o << "  \"avg_jct\": " << Num(s.avg_jct) << ",\n";
  o << "  \"p50_jct\": " << Num(s.p50_jct) << ",\n";
  o << "  \"p95_jct\": " << Num(s.p95_jct) << ",\n";
  o << "  \"p99_jct\": " << Num(s.p99_jct) << ",\n";
  o << "  \"avg_queue_delay\": " << Num(s.avg_queue_delay) << ",\n";
  o << "  \"p99_queue_delay\": " << Num(s.p99_queue_delay) << ",\n";
  o << "  \"p99_total_wait\": " << Num(s.p99_total_wait) << ",\n";
  o << "  \"avg_duration\": " << Num(s.avg_duration) << ",\n";
  o << "  \"makespan\": " << Num(s.makespan) << ",\n";
  o << "  \"utilization\": " << Num(s.utilization, 6) << ",\n";
  o << "  \"preemptions\": " << s.preemptions << ",\n";
  o << "  \"preemptions_per_hour\": " << Num(s.preemptions_per_hour) << ",\n";
  o << "  \"lost_gpu_hours\": " << Num(s.lost_gpu_hours) << ",\n";
  o << "  \"p99_slowdown\": " << Num(s.p99_slowdown) << ",\n";
  o << "  \"timeouts\": " << s.timeouts << ",\n";
  o << "  \"lost_runs\": " << s.lost_runs << ",\n";
  o << "  \"node_failures\": " << s.node_failures << ",\n";
  o << "  \"predicted_by_name\": " << s.predicted_by_name << ",\n";
  o << "  \"predicted_by_name_at_submit\": " << s.predicted_by_name_at_submit << ",\n";
  o << "  \"jain_fairness\": " << Num(s.jain_fairness, 6) << ",\n";
  o << "  \"queue_slowdown\": {";
  bool first = true;
  for (const auto& [q, x] : s.queue_slowdown) {
    o << (first ? "" : ", ") << "\"" << q << "\": " << Num(x, 4);
    first = false;
  }
  o << "},\n";
  if (s.estimates.sampled > 0)
    o << "  \"estimates\": " << EstimateAccuracyJson(s.estimates) << ",\n";
  if (s.data.stage_ins > 0) o << "  \"data\": " << DataJson(s) << ",\n";
  o << "  \"schedule_calls\": " << s.schedule_calls;
  if (s.sim_wall_time_s >= 0) {
    o << ",\n  \"sim_wall_time_s\": " << Num(s.sim_wall_time_s);
    if (s.schedule_wall_time_s >= 0) {
      o << ",\n  \"schedule_wall_time_s\": " << Num(s.schedule_wall_time_s);
    }
  }
  o << "\n}\n";
  return o.str();
}

std::string SummaryTable(const std::vector<Summary>& rows) {
  std::ostringstream o;
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "%-8s %7s %4s %10s %10s %10s %10s %10s %10s %8s %10s %6s %6s %7s %9s %8s %6s %8s\n",
                "policy", "jobs", "rej", "avg_jct_h", "p50_jct_h", "p95_jct_h", "p99_jct_h",
                "avg_wait_h", "p99_wait_h", "lb_h", "makespan_h", "util", "preem", "preem/h",
                "lost_gpuh", "p99_sd", "jain", "wall_s");
  o << buf;
  for (const Summary& s : rows) {
    std::string wall = s.sim_wall_time_s >= 0 ? Num(s.sim_wall_time_s, 2) : "-";
    std::snprintf(
        buf, sizeof buf,
        "%-8s %7lld %4lld %10.3f %10.3f %10.3f %10.3f %10.3f %10.3f %8.3f %10.1f %6.3f %6lld "
        "%7.2f %9.1f %8.1f %6.3f %8s\n",
        s.policy.c_str(), static_cast<long long>(s.jobs), static_cast<long long>(s.rejected),
        s.avg_jct / 3600, s.p50_jct / 3600, s.p95_jct / 3600, s.p99_jct / 3600,
        s.avg_queue_delay / 3600, s.p99_queue_delay / 3600, s.avg_duration / 3600,
        s.makespan / 3600, s.utilization, static_cast<long long>(s.preemptions),
        s.preemptions_per_hour, s.lost_gpu_hours, s.p99_slowdown, s.jain_fairness, wall.c_str());
    o << buf;
  }
  for (const Summary& s : rows) {
    if (s.estimates.sampled > 0) o << EstimateAccuracyLine(s.policy, s.estimates);
  }
  for (const Summary& s : rows) {
    if (s.data.stage_ins > 0) o << DataLine(s);
  }
  return o.str();
}

std::string FormatMilliGpus(int64_t milli) {
  if (milli % kGpuMilli == 0) return std::to_string(milli / kGpuMilli);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%lld.%03lld", static_cast<long long>(milli / kGpuMilli),
                static_cast<long long>(milli % kGpuMilli));
  return buf;
}

double FragmentedShare(const SimResult& result) {
  // (time, +milli at a start / -milli at an end, node, GPU); ends sort before starts.
  std::vector<std::tuple<TimeMs, int64_t, std::string, int32_t>> edges;
  for (const RunRecord& r : result.runs) {
    if (r.end < r.start) continue;
    for (const ReplicaPlacement& p : r.placement) {
      for (size_t g = 0; g < p.gpus.size(); ++g) {
        int64_t milli = g < p.gpu_milli.size() ? p.gpu_milli[g] : kGpuMilli;
        edges.emplace_back(r.start, milli, p.node, p.gpus[g]);
        edges.emplace_back(r.end, -milli, p.node, p.gpus[g]);
      }
    }
  }
  if (edges.empty() || result.total_gpus <= 0) return 0;
  std::sort(edges.begin(), edges.end());
  std::map<std::pair<std::string, int32_t>, int64_t> used;
  int64_t stranded = 0;  // milli-GPUs free on GPUs that hold a share
  auto left = [](int64_t u) { return u > 0 && u < kGpuMilli ? kGpuMilli - u : 0; };
  double area = 0;
  TimeMs from = std::get<0>(edges.front()), at = from;
  for (const auto& [t, milli, node, gpu] : edges) {
    area += static_cast<double>(stranded) * static_cast<double>(t - at);
    at = t;
    int64_t& u = used[{node, gpu}];
    stranded -= left(u);
    u += milli;
    stranded += left(u);
  }
  if (at <= from) return 0;
  return area /
         (static_cast<double>(result.total_gpus) * kGpuMilli * static_cast<double>(at - from));
}

std::string RunsCsv(const std::vector<TraceJob>& jobs, const SimResult& result) {
  std::string out = "job_id,start,end,gpus,nodes\n";
  for (const RunRecord& r : result.runs) {
    std::map<std::string, int64_t> per_node;  // milli-GPUs
    for (const ReplicaPlacement& p : r.placement) {
      for (size_t g = 0; g < p.gpus.size(); ++g) {
        per_node[p.node] += g < p.gpu_milli.size() ? p.gpu_milli[g] : kGpuMilli;
      }
    }
    out += jobs[r.job].id + "," + FormatSeconds(r.start) + "," + FormatSeconds(r.end) + "," +
           FormatMilliGpus(r.gpu_milli) + ",";
    bool first = true;
    for (const auto& [node, milli] : per_node) {
      out += (first ? "" : ";") + node + ":" + FormatMilliGpus(milli);
      first = false;
    }
    out += "\n";
  }
  return out;
}

std::string JctCdfSvg(const std::vector<Summary>& rows, const std::string& title) {
  const double w = 720, h = 440, left = 70, right = 150, top = 40, bottom = 60;
  const double pw = w - left - right, ph = h - top - bottom;
  double lo = 1e300, hi = 0;
  for (const Summary& s : rows) {
    for (double x : s.jcts) {
      double v = std::max(x, 1.0);
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  }
  if (hi <= 0) lo = 1, hi = 10;
  double llo = std::floor(std::log10(lo)), lhi = std::ceil(std::log10(hi));
  if (lhi <= llo) lhi = llo + 1;
  auto X = [&](double v) { return left + (std::log10(std::max(v, 1.0)) - llo) / (lhi - llo) * pw; };
  auto Y = [&](double f) { return top + (1.0 - f) * ph; };
  static const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                                  "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"};
  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << Num(w, 0) << "\" height=\""
    << Num(h, 0) << "\" viewBox=\"0 0 " << Num(w, 0) << " " << Num(h, 0)
    << "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  o << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  o << "<text x=\"" << Num(left + pw / 2, 1) << "\" y=\"22\" text-anchor=\"middle\" "
    << "font-size=\"14\">" << Escape(title) << "</text>\n";
  // Grid and axes.
  for (double e = llo; e <= lhi; e += 1) {
    double x = X(std::pow(10.0, e));
    o << "<line x1=\"" << Num(x, 1) << "\" y1=\"" << Num(top, 1) << "\" x2=\"" << Num(x, 1)
      << "\" y2=\"" << Num(top + ph, 1) << "\" stroke=\"#ddd\"/>\n";
    o << "<text x=\"" << Num(x, 1) << "\" y=\"" << Num(top + ph + 18, 1)
      << "\" text-anchor=\"middle\">1e" << static_cast<int>(e) << "</text>\n";
  }
  for (int i = 0; i <= 4; ++i) {
    double f = i / 4.0;
    o << "<line x1=\"" << Num(left, 1) << "\" y1=\"" << Num(Y(f), 1) << "\" x2=\""
      << Num(left + pw, 1) << "\" y2=\"" << Num(Y(f), 1) << "\" stroke=\"#ddd\"/>\n";
    o << "<text x=\"" << Num(left - 8, 1) << "\" y=\"" << Num(Y(f) + 4, 1)
      << "\" text-anchor=\"end\">" << Num(f, 2) << "</text>\n";
  }
  o << "<rect x=\"" << Num(left, 1) << "\" y=\"" << Num(top, 1) << "\" width=\"" << Num(pw, 1)
    << "\" height=\"" << Num(ph, 1) << "\" fill=\"none\" stroke=\"black\"/>\n";
  o << "<text x=\"" << Num(left + pw / 2, 1) << "\" y=\"" << Num(h - 15, 1)
    << "\" text-anchor=\"middle\">job completion time (s, log scale)</text>\n";
  o << "<text transform=\"translate(18," << Num(top + ph / 2, 1)
    << ") rotate(-90)\" text-anchor=\"middle\">fraction of jobs</text>\n";
  for (size_t k = 0; k < rows.size(); ++k) {
    const Summary& s = rows[k];
    const char* color = kColors[k % 8];
    // A step CDF, thinned to at most ~400 points so the file stays small.
    std::ostringstream pts;
    size_t n = s.jcts.size();
    size_t step = std::max<size_t>(1, n / 400);
    double prev_f = 0;
    for (size_t i = 0; i < n; i += step) {
      size_t j = std::min(n - 1, i + step - 1);
      double x = X(s.jcts[j]);
      double f = static_cast<double>(j + 1) / static_cast<double>(n);
      pts << Num(x, 1) << "," << Num(Y(prev_f), 1) << " " << Num(x, 1) << "," << Num(Y(f), 1)
          << " ";
      prev_f = f;
    }
    o << "<polyline fill=\"none\" stroke=\"" << color << "\" stroke-width=\"1.5\" points=\""
      << pts.str() << "\"/>\n";
    double ly = top + 10 + 20 * static_cast<double>(k);
    o << "<line x1=\"" << Num(left + pw + 12, 1) << "\" y1=\"" << Num(ly, 1) << "\" x2=\""
      << Num(left + pw + 36, 1) << "\" y2=\"" << Num(ly, 1) << "\" stroke=\"" << color
      << "\" stroke-width=\"2\"/>\n";
    o << "<text x=\"" << Num(left + pw + 42, 1) << "\" y=\"" << Num(ly + 4, 1) << "\">"
      << Escape(s.policy) << " (avg " << Num(s.avg_jct / 3600, 2) << " h)</text>\n";
  }
  o << "</svg>\n";
  return o.str();
}

}  // namespace corral::sim
