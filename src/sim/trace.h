// Job traces for the simulator (DESIGN §12): one reader per trace format, all producing the
// same TraceJob rows. Readers are strict about what they accept and count what they reject:
// a malformed row is recorded with its line number, and the read fails when more than
// `max_bad_fraction` of the rows are bad, so a broken file never silently shrinks the
// workload. Pure functions; no state.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/job.h"
#include "core/status.h"
#include "core/time.h"

namespace corral::sim {

enum class TraceFormat {
  kAuto,
  kCsv,
  kPhilly,
  kPhillyUsers,
  kGavel,
  kTiresias,
  kHelios,
  kAlibaba,
  kOpenb
};
const char* TraceFormatName(TraceFormat f);
bool ParseTraceFormat(const std::string& text, TraceFormat* out);

struct TraceJob {
  std::string id;              // the trace's own id, or "L<line>" where the format has none
  TimeMs submit_ms = 0;        // relative to the trace's first submission after reading
  TimeMs epoch_ms = 0;         // as written in the trace (Unix time for dated traces)
  DurationMs duration_ms = 0;  // run time on num_gpus GPUs, never restarted
  int32_t num_gpus = 0;
  // A share of one GPU (num_gpus is then 1): milli-GPUs in 1..999, and/or the GPU memory it may
  // use (MiB; 0: its milli share of the GPU's memory). Both 0: num_gpus whole GPUs.
  int32_t gpu_milli = 0;
  int64_t gpu_memory_mb = 0;
  std::string queue;  // virtual cluster / queue; "default" where the format has none
  std::string user;
  std::string name;              // the job's name where the format has one (Helios jobname)
  DurationMs time_limit_ms = 0;  // where the format has one; 0: none
  // The dataset it reads (SimConfig::data; dataset_assign.h gives one where the trace has
  // none); "": none.
  std::string dataset;
  int64_t line = 0;  // line of the source file, for error messages
  // A job as a head recorded it (`corral whatif`): submitted with this spec (its queue, name
  // and time limit replaced by the fields above) rather than as a preemptible gang of
  // whole-node replicas. Shared: a trace and its changed copies hold one spec per job.
  std::shared_ptr<const JobSpec> spec;
};

struct BadRow {
  int64_t line = 0;
  std::string why;
};

struct Trace {
  TraceFormat format = TraceFormat::kAuto;  // the format actually read
  std::vector<TraceJob> jobs;               // sorted by (submit_ms, line)
  int64_t rows = 0;                         // data rows seen (good + bad), blank lines excluded
  std::vector<BadRow> bad;                  // every rejected row, in file order
  // Good rows left out on purpose (openb: CPU-only tasks, and tasks the real cluster never
  // scheduled, whose run time is unknown).
  int64_t skipped = 0;
};

struct TraceOptions {
  TraceFormat format = TraceFormat::kAuto;
  double max_bad_fraction = 0.01;  // fail when bad rows exceed this share of all rows
  // Gavel traces give training steps, not seconds; duration = total_steps / this rate.
  double gavel_steps_per_second = 1.0;
};

// Reads `text` (the whole file) named `source` in error messages.
Result<Trace> ParseTrace(const std::string& text, const std::string& source,
                         const TraceOptions& options);
Result<Trace> ReadTraceFile(const std::string& path, const TraceOptions& options);

// --infer-job-names: a synthetic job name and user for jobs the trace gives none (Philly), from
// what a scheduler knows at submit time only, never the duration: sweeps (hyper-parameter
// searches) submit many near-identical jobs in a burst. Going through `jobs` in order, a job
// whose previous submission of the same queue and GPU count came at most `window` before it
// joins that job's burst; any other starts a new one. A burst's jobs are named
// "burst-<queue>-<gpus>-<n>" (n counts the bursts of that queue and GPU count from 0) and owned
// by their queue, so the run-time estimator's (user, name) history predicts a job from its
// siblings that have ended. Jobs that have a name keep it and their user, and take part in no
// burst. Returns the number of bursts. REQUIRES: jobs sorted by submit_ms; window >= 0.
int64_t InferJobNames(std::vector<TraceJob>* jobs, DurationMs window);

// "HH:MM" style checks aside, parses "YYYY-MM-DD HH:MM:SS" as UTC seconds since the epoch.
bool ParseDateTime(const std::string& text, int64_t* seconds);

}  // namespace corral::sim
