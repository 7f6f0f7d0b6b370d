#include "sim/estimate_accuracy.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace corral::sim {
namespace {

double NearestRank(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  auto rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size())));
  return v[std::clamp<size_t>(rank, 1, v.size()) - 1];
}

std::string Fixed(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f", v);
  return buf;
}

}  // namespace

EstimateAccuracy MeasureEstimateAccuracy(const std::vector<TraceJob>& jobs, const SimResult& result,
                                         TimeMs report_from) {
  EstimateAccuracy a;
  std::vector<double> abs_errors, errors, waits;
  int64_t late = 0;
  std::vector<double> abs_by[3];
  int64_t late_by[3] = {0, 0, 0};
  for (size_t i = 0; i < jobs.size() && i < result.jobs.size(); ++i) {
    const JobOutcome& o = result.jobs[i];
    if (!o.estimate_sampled || jobs[i].submit_ms < report_from) continue;
    ++a.sampled;
    if (o.estimated_start < 0) {
      // Started by its own instant's passes, or pending without an estimate.
      if (o.first_start == jobs[i].submit_ms) {
        ++a.started_at_once;
      } else {
        ++a.no_estimate;
      }
      continue;
    }
    if (o.first_start < 0) {
      ++a.never_started;
      continue;
    }
    double error = static_cast<double>(o.estimated_start - o.first_start) / 1000.0;
    errors.push_back(error);
    abs_errors.push_back(std::fabs(error));
    waits.push_back(static_cast<double>(o.first_start - jobs[i].submit_ms) / 1000.0);
    if (error < -60.0) ++late;
    const auto c = static_cast<size_t>(o.estimate_confidence);
    abs_by[c].push_back(std::fabs(error));
    late_by[c] += error < -60.0;
  }
  for (size_t c = 0; c < 3; ++c) {
    EstimateAccuracy::ByConfidence& b = a.by_confidence[c];
    b.judged = static_cast<int64_t>(abs_by[c].size());
    b.median_abs_error_s = NearestRank(abs_by[c], 50);
    b.late_share =
        b.judged == 0 ? 0 : static_cast<double>(late_by[c]) / static_cast<double>(b.judged);
  }
  a.judged = static_cast<int64_t>(errors.size());
  a.median_abs_error_s = NearestRank(abs_errors, 50);
  a.p90_abs_error_s = NearestRank(abs_errors, 90);
  a.median_error_s = NearestRank(errors, 50);
  a.median_wait_s = NearestRank(waits, 50);
  a.late_share = a.judged == 0 ? 0 : static_cast<double>(late) / static_cast<double>(a.judged);
  return a;
}

std::string EstimateAccuracyJson(const EstimateAccuracy& a) {
  std::ostringstream o;
  o << "{\"sampled\": " << a.sampled << ", \"started_at_once\": " << a.started_at_once
    << ", \"no_estimate\": " << a.no_estimate << ", \"never_started\": " << a.never_started
    << ", \"judged\": " << a.judged << ", \"median_abs_error_s\": " << Fixed(a.median_abs_error_s)
    << ", \"p90_abs_error_s\": " << Fixed(a.p90_abs_error_s)
    << ", \"median_error_s\": " << Fixed(a.median_error_s)
    << ", \"late_share\": " << Fixed(a.late_share)
    << ", \"median_wait_s\": " << Fixed(a.median_wait_s) << ", \"by_confidence\": {";
  for (size_t c = 0; c < 3; ++c) {
    const EstimateAccuracy::ByConfidence& b = a.by_confidence[c];
    o << (c ? ", " : "") << "\"" << EstimateConfidenceName(static_cast<EstimateConfidence>(c))
      << "\": {\"judged\": " << b.judged
      << ", \"median_abs_error_s\": " << Fixed(b.median_abs_error_s)
      << ", \"late_share\": " << Fixed(b.late_share) << "}";
  }
  o << "}}";
  return o.str();
}

std::string EstimateAccuracyLine(const std::string& policy, const EstimateAccuracy& a) {
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "%-8s estimates: %lld sampled, %lld started at once, %lld without one, %lld "
                "judged: |error| median %.2f h, p90 %.2f h; error median %+.2f h; %.1f%% late; "
                "their wait median %.2f h\n",
                policy.c_str(), static_cast<long long>(a.sampled),
                static_cast<long long>(a.started_at_once), static_cast<long long>(a.no_estimate),
                static_cast<long long>(a.judged), a.median_abs_error_s / 3600,
                a.p90_abs_error_s / 3600, a.median_error_s / 3600, 100 * a.late_share,
                a.median_wait_s / 3600);
  std::string out = buf;
  for (size_t c = 0; c < 3; ++c) {
    const EstimateAccuracy::ByConfidence& b = a.by_confidence[c];
    if (b.judged == 0) continue;
    std::snprintf(
        buf, sizeof buf, "%-8s   %s confidence: %lld judged: |error| median %.2f h; %.1f%% late\n",
        "", EstimateConfidenceName(static_cast<EstimateConfidence>(c)),
        static_cast<long long>(b.judged), b.median_abs_error_s / 3600, 100 * b.late_share);
    out += buf;
  }
  return out;
}

}  // namespace corral::sim
