#include "sim/trace.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

namespace corral::sim {

const char* TraceFormatName(TraceFormat f) {
  switch (f) {
    case TraceFormat::kAuto:
      return "auto";
    case TraceFormat::kCsv:
      return "csv";
    case TraceFormat::kPhilly:
      return "philly";
    case TraceFormat::kPhillyUsers:
      return "philly-users";
    case TraceFormat::kGavel:
      return "gavel";
    case TraceFormat::kTiresias:
      return "tiresias";
    case TraceFormat::kHelios:
      return "helios";
    case TraceFormat::kAlibaba:
      return "alibaba";
    case TraceFormat::kOpenb:
      return "openb";
  }
  return "unknown";
}

bool ParseTraceFormat(const std::string& text, TraceFormat* out) {
  for (TraceFormat f : {TraceFormat::kAuto, TraceFormat::kCsv, TraceFormat::kPhilly,
                        TraceFormat::kPhillyUsers, TraceFormat::kGavel, TraceFormat::kTiresias,
                        TraceFormat::kHelios, TraceFormat::kAlibaba, TraceFormat::kOpenb}) {
    if (text == TraceFormatName(f)) {
      *out = f;
      return true;
    }
  }
  return false;
}

namespace {

std::string Trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && (s[b] == ' ' || s[b] == '\t' || s[b] == '\r')) ++b;
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t' || s[e - 1] == '\r')) --e;
  return std::string(s.substr(b, e - b));
}

// Splits one line on `sep`; a field in double quotes may contain the separator.
std::vector<std::string> Split(std::string_view line, char sep) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false;
  for (char c : line) {
    if (c == '"') {
      quoted = !quoted;
    } else if (c == sep && !quoted) {
      out.push_back(Trim(cur));
      cur.clear();
    } else {
      cur.push_back(c);
    }
  }
  out.push_back(Trim(cur));
  return out;
}

bool ParseDouble(const std::string& s, double* out) {
  if (s.empty()) return false;
  const char* b = s.data();
  const char* e = b + s.size();
  if (*b == '+') ++b;
  auto [p, ec] = std::from_chars(b, e, *out);
  return ec == std::errc() && p == e && std::isfinite(*out);
}

bool ParseInt(const std::string& s, int64_t* out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  if (ec == std::errc() && p == s.data() + s.size()) return true;
  double d = 0;  // "4.0" is a whole number written as a float
  if (ParseDouble(s, &d) && d == std::floor(d) && std::fabs(d) < 1e15) {
    *out = static_cast<int64_t>(d);
    return true;
  }
  return false;
}

// Seconds (a number, or a "YYYY-MM-DD HH:MM:SS" timestamp) to whole milliseconds.
bool ParseTimeSeconds(const std::string& s, TimeMs* out) {
  double d = 0;
  if (ParseDouble(s, &d)) {
    // Beyond 1e13 s (300,000 years) no trace has a time, and llround's result is undefined
    // past int64 (fuzz_trace found a submit time of 1.5e123 s, then an overflow rebasing it).
    if (!std::isfinite(d) || std::fabs(d) >= 1e13) return false;
    *out = std::llround(d * 1000.0);
    return true;
  }
  int64_t sec = 0;
  if (ParseDateTime(s, &sec)) {
    *out = sec * 1000;
    return true;
  }
  return false;
}

// Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar (H. Hinnant's algorithm).
int64_t DaysFromCivil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

struct Reader {
  const std::string& source;
  const TraceOptions& options;
  Trace trace;

  void Bad(int64_t line, std::string why) { trace.bad.push_back({line, std::move(why)}); }

  // Adds a job after the checks every format shares. Returns false (and records why) if bad.
  bool Add(int64_t line, std::string id, const std::string& submit, const std::string& duration,
           const std::string& gpus, std::string queue, std::string user, double duration_scale) {
    TraceJob j;
    j.line = line;
    j.id = id.empty() ? std::to_string(line) : std::move(id);
    if (!ParseTimeSeconds(submit, &j.submit_ms)) {
      Bad(line, "submit time '" + submit + "' is not a number of seconds or a timestamp");
      return false;
    }
    double d = 0;
    // Past 1e13 s llround's result is unspecified, and sums of such durations overflow.
    if (!ParseDouble(duration, &d) || d < 0 || !(d * duration_scale < 1e13)) {
      Bad(line, "duration '" + duration + "' is not a non-negative number of seconds");
      return false;
    }
    j.duration_ms = std::llround(d * duration_scale * 1000.0);
    int64_t g = 0;
    if (!ParseInt(gpus, &g) || g <= 0 || g > 1000000) {
      Bad(line, "GPU count '" + gpus + "' is not a positive whole number");
      return false;
    }
    j.num_gpus = static_cast<int32_t>(g);
    j.queue = queue.empty() ? "default" : std::move(queue);
    j.user = std::move(user);
    trace.jobs.push_back(std::move(j));
    return true;
  }

  // The optional name and time limit (seconds; empty or 0: none) of the job Add just added;
  // drops it (and records why) if the limit is bad.
  void SetExtras(int64_t line, std::string name, const std::string& time_limit) {
    TraceJob& j = trace.jobs.back();
    j.name = std::move(name);
    if (time_limit.empty()) return;
    double t = 0;
    if (!ParseDouble(time_limit, &t) || t < 0 || !(t < 1e13)) {
      trace.jobs.pop_back();
      Bad(line, "time_limit '" + time_limit + "' is not a non-negative number of seconds");
      return;
    }
    j.time_limit_ms = std::llround(t * 1000.0);
  }
};

struct Lines {
  std::vector<std::pair<int64_t, std::string>> rows;  // (line number, text), blanks dropped
};

Lines SplitLines(const std::string& text) {
  Lines out;
  int64_t line = 0;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    ++line;
    std::string l = text.substr(pos, nl - pos);
    if (!l.empty() && l.back() == '\r') l.pop_back();
    if (!Trim(l).empty()) out.rows.emplace_back(line, std::move(l));
    pos = nl + 1;
  }
  return out;
}

// Column indices by header name; -1 where absent.
std::map<std::string, int> HeaderIndex(const std::vector<std::string>& header) {
  std::map<std::string, int> idx;
  for (size_t i = 0; i < header.size(); ++i) idx[header[i]] = static_cast<int>(i);
  return idx;
}

int Col(const std::map<std::string, int>& idx, const std::string& name) {
  auto it = idx.find(name);
  return it == idx.end() ? -1 : it->second;
}

std::string Field(const std::vector<std::string>& f, int i) {
  return i >= 0 && i < static_cast<int>(f.size()) ? f[i] : std::string();
}

bool StartsWith(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }

TraceFormat Detect(const std::string& first) {
  if (first.find('\t') != std::string::npos) return TraceFormat::kGavel;
  if (StartsWith(first, "timestamp,duration,num_gpus")) return TraceFormat::kPhilly;
  if (StartsWith(first, "u_id,user,gpu_num")) return TraceFormat::kPhillyUsers;
  if (StartsWith(first, "job_id,num_gpu,submit_time")) return TraceFormat::kTiresias;
  if (first.find("gpu_num") != std::string::npos &&
      first.find("submit_time") != std::string::npos) {
    return TraceFormat::kHelios;
  }
  if (StartsWith(first, "job_name,task_name,inst_num")) return TraceFormat::kAlibaba;
  if (StartsWith(first, "name,cpu_milli,memory_mib,num_gpu,gpu_milli")) return TraceFormat::kOpenb;
  return TraceFormat::kCsv;
}

std::string Stem(const std::string& source) {
  size_t slash = source.find_last_of('/');
  std::string base = slash == std::string::npos ? source : source.substr(slash + 1);
  size_t dot = base.find('.');
  return dot == std::string::npos ? base : base.substr(0, dot);
}

// Explains why a file the user pointed at has no job-level rows (the aggregates shipped
// with the Helios and Alibaba traces), or returns ok.
Status RejectAggregates(TraceFormat format, const std::string& first, const std::string& source) {
  const std::string helios_msg =
      " is Helios aggregate data (cluster summaries, VC sizes or arrival counts), not job-level "
      "rows; the job-level Helios log (cluster_log.csv: job_id,user,vc,...,gpu_num,...,"
      "submit_time,...,duration) is not available here, so Helios cannot be replayed";
  if (StartsWith(first, "id,gpu_num,job_num") || StartsWith(first, "vc,node num") ||
      StartsWith(first, ",num") || StartsWith(first, "date,") || StartsWith(first, "time,")) {
    return InvalidArgument(source + helios_msg);
  }
  if (format == TraceFormat::kHelios) return Status::Ok();
  if (format == TraceFormat::kAlibaba || format == TraceFormat::kAuto) {
    std::vector<std::string> f = Split(first, ',');
    if (f.size() == 5 && !f[0].empty() &&
        (f[1] == "P100" || f[1] == "T4" || f[1] == "V100" || f[1] == "V100M32" || f[1] == "MISC" ||
         f[1] == "CPU")) {
      return InvalidArgument(
          source +
          " is the Alibaba PAI machine spec (machine,gpu_type,cap_cpu,cap_mem,cap_gpu), not "
          "job-level rows; the PAI job/task tables are not available here, so PAI cannot be "
          "replayed (with pai_task_table.csv, use --format alibaba)");
    }
  }
  return Status::Ok();
}

// The Alibaba GPU-sharing trace of 2023 (openb_pod_list_*.csv): name,cpu_milli,memory_mib,
// num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time
// (seconds). A task is submitted at creation_time and runs from scheduled_time to
// deletion_time; num_gpu 1 with gpu_milli below 1000 is a share of one GPU. CPU-only tasks and
// tasks the real cluster never scheduled (no scheduled_time: their run time is unknown) are
// skipped and counted.
Status ReadOpenb(const std::string& first, const Lines& lines, Reader* r) {
  std::map<std::string, int> idx = HeaderIndex(Split(first, ','));
  for (const char* need :
       {"name", "num_gpu", "gpu_milli", "creation_time", "deletion_time", "scheduled_time"}) {
    if (Col(idx, need) < 0) {
      return InvalidArgument(r->source + ": an openb pod list's header '" + first + "' lacks '" +
                             need + "'");
    }
  }
  for (size_t i = 1; i < lines.rows.size(); ++i) {
    const auto& [line, l] = lines.rows[i];
    std::vector<std::string> f = Split(l, ',');
    ++r->trace.rows;
    if (f.size() < idx.size()) {
      r->Bad(line, "has " + std::to_string(f.size()) + " field(s); the header has " +
                       std::to_string(idx.size()));
      continue;
    }
    const std::string& gpus = Field(f, Col(idx, "num_gpu"));
    const std::string& scheduled = Field(f, Col(idx, "scheduled_time"));
    if (gpus == "0" || scheduled.empty()) {
      ++r->trace.skipped;
      continue;
    }
    int64_t milli = 0;
    double start = 0, end = 0;
    if (!ParseInt(Field(f, Col(idx, "gpu_milli")), &milli) || milli <= 0 || milli > 1000) {
      r->Bad(line, "gpu_milli '" + Field(f, Col(idx, "gpu_milli")) + "' is not in 1..1000");
      continue;
    }
    if (!ParseDouble(scheduled, &start) ||
        !ParseDouble(Field(f, Col(idx, "deletion_time")), &end) || end < start) {
      r->Bad(line, "scheduled_time or deletion_time is not a number, or deletion comes first");
      continue;
    }
    std::ostringstream dur;
    dur.precision(17);
    dur << (end - start);
    if (!r->Add(line, Field(f, Col(idx, "name")), Field(f, Col(idx, "creation_time")), dur.str(),
                gpus, "", "", 1.0)) {
      continue;
    }
    TraceJob& j = r->trace.jobs.back();
    if (milli < 1000 && j.num_gpus != 1) {
      r->trace.jobs.pop_back();
      r->Bad(line, "gpu_milli " + std::to_string(milli) + " is a share, but num_gpu is " + gpus +
                       " (a share is of one GPU)");
      continue;
    }
    if (milli < 1000) j.gpu_milli = static_cast<int32_t>(milli);
  }
  return Status::Ok();
}

}  // namespace

bool ParseDateTime(const std::string& text, int64_t* seconds) {
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0;
  char tail = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2d %2d:%2d:%2d%c", &y, &mo, &d, &h, &mi, &s, &tail) !=
      6) {
    return false;
  }
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h < 0 || h > 23 || mi < 0 || mi > 59 || s < 0 ||
      s > 60) {
    return false;
  }
  *seconds = DaysFromCivil(y, mo, d) * 86400 + h * 3600 + mi * 60 + s;
  return true;
}

namespace {

Status ReadCsvTrace(const std::string& first, const Lines& lines, Reader* r) {
  const std::string& source = r->source;
  size_t begin = 0;
  // job_id,submit_time,duration,num_gpus[,queue][,user]; the header is optional and, when
  // present, may order the columns differently and add name and time_limit (seconds).
  std::vector<std::string> h = Split(first, ',');
  std::map<std::string, int> idx;
  if (!h.empty() && h[0] == "job_id") {
    idx = HeaderIndex(h);
    begin = 1;
    for (const char* need : {"job_id", "submit_time", "duration", "num_gpus"}) {
      if (Col(idx, need) < 0) {
        return InvalidArgument(source + ": the CSV header '" + first + "' lacks column '" + need +
                               "'; expected job_id,submit_time,duration,num_gpus[,queue]"
                               "[,user] (or use --format philly|gavel|tiresias|helios|alibaba)");
      }
    }
  } else {
    idx = {{"job_id", 0},   {"submit_time", 1}, {"duration", 2},
           {"num_gpus", 3}, {"queue", 4},       {"user", 5}};
  }
  for (size_t i = begin; i < lines.rows.size(); ++i) {
    const auto& [line, l] = lines.rows[i];
    std::vector<std::string> f = Split(l, ',');
    ++r->trace.rows;
    if (f.size() < 4) {
      r->Bad(line, "has " + std::to_string(f.size()) +
                       " field(s); expected job_id,submit_time,duration,num_gpus[,queue][,user]");
      continue;
    }
    if (r->Add(line, Field(f, Col(idx, "job_id")), Field(f, Col(idx, "submit_time")),
               Field(f, Col(idx, "duration")), Field(f, Col(idx, "num_gpus")),
               Field(f, Col(idx, "queue")), Field(f, Col(idx, "user")), 1.0)) {
      r->SetExtras(line, Field(f, Col(idx, "name")), Field(f, Col(idx, "time_limit")));
    }
  }
  return Status::Ok();
}

Status ReadPhillyTrace(const std::string& first, const Lines& lines, Reader* r) {
  const std::string& source = r->source;
  // timestamp,duration,num_gpus,gpu_time,cluster (pollux's philly.csv); no job id.
  if (!StartsWith(first, "timestamp,")) {
    return InvalidArgument(source +
                           ": a Philly trace starts with the header "
                           "'timestamp,duration,num_gpus,gpu_time,cluster', not '" +
                           first + "'");
  }
  for (size_t i = 1; i < lines.rows.size(); ++i) {
    const auto& [line, l] = lines.rows[i];
    std::vector<std::string> f = Split(l, ',');
    ++r->trace.rows;
    if (f.size() != 5) {
      r->Bad(line, "has " + std::to_string(f.size()) +
                       " field(s); expected 5: timestamp,duration,num_gpus,gpu_time,cluster");
      continue;
    }
    int64_t sec = 0;
    if (!ParseDateTime(f[0], &sec)) {
      r->Bad(line, "timestamp '" + f[0] + "' is not 'YYYY-MM-DD HH:MM:SS'");
      continue;
    }
    r->Add(line, "", std::to_string(sec), f[1], f[2], f[4], "", 1.0);
  }
  return Status::Ok();
}

Status ReadPhillyUsersTrace(const std::string& first, const Lines& lines, Reader* r) {
  const std::string& source = r->source;
  // u_id,user,gpu_num,cpu_num,node_num,interval,run_time,wall_time,new_status (the JSSPP'24
  // slice of Philly with user ids): a job is submitted `interval` seconds after the row
  // before it. One queue; the user is "u<user>".
  const std::string header =
      "u_id,user,gpu_num,cpu_num,node_num,interval,run_time,wall_time,new_status";
  if (!StartsWith(first, "u_id,")) {
    return InvalidArgument(source + ": a philly-users trace starts with the header '" + header +
                           "', not '" + first + "'");
  }
  double submit = 0;
  for (size_t i = 1; i < lines.rows.size(); ++i) {
    const auto& [line, l] = lines.rows[i];
    std::vector<std::string> f = Split(l, ',');
    ++r->trace.rows;
    double interval = 0;
    if (f.size() != 9) {
      r->Bad(line, "has " + std::to_string(f.size()) + " field(s); expected 9: " + header);
      continue;
    }
    if (!ParseDouble(f[5], &interval) || interval < 0 || !(interval < 1e9)) {
      r->Bad(line, "interval '" + f[5] + "' is not a non-negative number of seconds");
      continue;
    }
    if (f[1].empty()) {
      r->Bad(line, "user is empty");
      continue;
    }
    submit += interval;
    std::ostringstream at;
    at.precision(17);
    at << submit;
    r->Add(line, f[0], at.str(), f[6], f[2], "", "u" + f[1], 1.0);
  }
  return Status::Ok();
}

Status ReadGavelTrace(const std::string& /*first*/, const Lines& lines, Reader* r) {
  const std::string& source = r->source;
  // Tab-separated. 7 fields (msr traces): job_type, command, num_steps_arg,
  // needs_data_dir, total_steps, arrival_time_s, scale_factor. 10 fields (current
  // format): job_type, command, working_directory, num_steps_arg, needs_data_dir,
  // total_steps, scale_factor, priority_weight, SLO, arrival_time. The file's stem (the
  // Philly VC for msr traces) is the queue.
  if (!(r->options.gavel_steps_per_second > 0)) {
    return InvalidArgument("--gavel-steps-per-second must be > 0");
  }
  std::string queue = Stem(source);
  for (const auto& [line, l] : lines.rows) {
    std::vector<std::string> f = Split(l, '\t');
    ++r->trace.rows;
    std::string steps, arrival, gpus;
    if (f.size() == 7) {
      steps = f[4], arrival = f[5], gpus = f[6];
    } else if (f.size() == 10) {
      steps = f[5], gpus = f[6], arrival = f[9];
    } else {
      r->Bad(line, "has " + std::to_string(f.size()) +
                       " tab-separated field(s); a Gavel trace row has 7 or 10");
      continue;
    }
    r->Add(line, "", arrival, steps, gpus, queue, "", 1.0 / r->options.gavel_steps_per_second);
  }
  return Status::Ok();
}

Status ReadTiresiasTrace(const std::string& first, const Lines& lines, Reader* r) {
  const std::string& source = r->source;
  // job_id,num_gpu,submit_time,iterations,model_name,duration,interval
  std::map<std::string, int> idx = HeaderIndex(Split(first, ','));
  for (const char* need : {"job_id", "num_gpu", "submit_time", "duration"}) {
    if (Col(idx, need) < 0) {
      return InvalidArgument(source + ": the Tiresias header '" + first + "' lacks column '" +
                             need + "'");
    }
  }
  for (size_t i = 1; i < lines.rows.size(); ++i) {
    const auto& [line, l] = lines.rows[i];
    std::vector<std::string> f = Split(l, ',');
    ++r->trace.rows;
    if (f.size() < idx.size()) {
      r->Bad(line, "has " + std::to_string(f.size()) + " field(s); the header has " +
                       std::to_string(idx.size()));
      continue;
    }
    r->Add(line, Field(f, Col(idx, "job_id")), Field(f, Col(idx, "submit_time")),
           Field(f, Col(idx, "duration")), Field(f, Col(idx, "num_gpu")), "", "", 1.0);
  }
  return Status::Ok();
}

Status ReadHeliosTrace(const std::string& first, const Lines& lines, Reader* r) {
  const std::string& source = r->source;
  // HeliosData cluster_log.csv: job_id,user,vc,jobname,gpu_num,cpu_num,node_num,state,
  // submit_time,start_time,end_time,duration,queue. CPU-only jobs are skipped.
  std::map<std::string, int> idx = HeaderIndex(Split(first, ','));
  for (const char* need : {"job_id", "gpu_num", "submit_time", "duration"}) {
    if (Col(idx, need) < 0) {
      return InvalidArgument(source +
                             ": a Helios job log has a header with job_id, "
                             "gpu_num, submit_time and duration; '" +
                             first + "' lacks '" + need +
                             "' (only Helios aggregates are available in "
                             "shared/traces/helios-aggregates, and they cannot be replayed)");
    }
  }
  for (size_t i = 1; i < lines.rows.size(); ++i) {
    const auto& [line, l] = lines.rows[i];
    std::vector<std::string> f = Split(l, ',');
    ++r->trace.rows;
    if (f.size() < idx.size()) {
      r->Bad(line, "has " + std::to_string(f.size()) + " field(s); the header has " +
                       std::to_string(idx.size()));
      continue;
    }
    if (Field(f, Col(idx, "gpu_num")) == "0") continue;  // a CPU job
    if (r->Add(line, Field(f, Col(idx, "job_id")), Field(f, Col(idx, "submit_time")),
               Field(f, Col(idx, "duration")), Field(f, Col(idx, "gpu_num")),
               Field(f, Col(idx, "vc")), Field(f, Col(idx, "user")), 1.0)) {
      r->SetExtras(line, Field(f, Col(idx, "jobname")), "");
    }
  }
  return Status::Ok();
}

Status ReadAlibabaTrace(const std::string& first, const Lines& lines, Reader* r) {
  size_t begin = 0;
  // pai_task_table (no header upstream): job_name,task_name,inst_num,status,start_time,
  // end_time,plan_cpu,plan_mem,plan_gpu,gpu_type. plan_gpu is percent of one GPU per
  // instance; one task is one job of ceil(inst_num * plan_gpu / 100) GPUs, submitted at
  // start_time (the task table has no submit time). Tasks without GPUs are skipped.
  if (StartsWith(first, "job_name,")) begin = 1;
  for (size_t i = begin; i < lines.rows.size(); ++i) {
    const auto& [line, l] = lines.rows[i];
    std::vector<std::string> f = Split(l, ',');
    ++r->trace.rows;
    if (f.size() != 10) {
      r->Bad(line, "has " + std::to_string(f.size()) +
                       " field(s); a pai_task_table row has 10: job_name,task_name,inst_num,"
                       "status,start_time,end_time,plan_cpu,plan_mem,plan_gpu,gpu_type");
      continue;
    }
    double inst = 0, plan = 0, start = 0, end = 0;
    if (f[8].empty() || (ParseDouble(f[8], &plan) && plan == 0)) continue;  // CPU task
    if (!ParseDouble(f[2], &inst) || inst <= 0 || !ParseDouble(f[8], &plan) || plan < 0 ||
        !ParseDouble(f[4], &start) || !ParseDouble(f[5], &end) || end < start) {
      r->Bad(line, "inst_num, plan_gpu, start_time or end_time is missing or inconsistent");
      continue;
    }
    const double want = std::ceil(inst * plan / 100.0 - 1e-9);
    if (!(want <= 1e6)) {  // a cast of a larger (or NaN) double is undefined (fuzz_trace)
      r->Bad(line, "inst_num x plan_gpu asks for more than a million GPUs");
      continue;
    }
    int64_t gpus = static_cast<int64_t>(want);
    std::ostringstream dur;
    dur.precision(17);
    dur << (end - start);
    r->Add(line, f[0] + "/" + f[1], f[4], dur.str(), std::to_string(gpus), "", "", 1.0);
  }
  return Status::Ok();
}

// The rows of a trace in `format` into r's trace (bad rows noted there); a header that does
// not fit the format is an error.
Status ReadTraceRows(TraceFormat format, const std::string& first, const Lines& lines, Reader* r) {
  switch (format) {
    case TraceFormat::kAuto:
    case TraceFormat::kCsv:
      return ReadCsvTrace(first, lines, r);
    case TraceFormat::kPhilly:
      return ReadPhillyTrace(first, lines, r);
    case TraceFormat::kPhillyUsers:
      return ReadPhillyUsersTrace(first, lines, r);
    case TraceFormat::kGavel:
      return ReadGavelTrace(first, lines, r);
    case TraceFormat::kTiresias:
      return ReadTiresiasTrace(first, lines, r);
    case TraceFormat::kHelios:
      return ReadHeliosTrace(first, lines, r);
    case TraceFormat::kAlibaba:
      return ReadAlibabaTrace(first, lines, r);
    case TraceFormat::kOpenb:
      return ReadOpenb(first, lines, r);
  }
  return Status::Ok();
}

// Too many bad rows, or no GPU job, is an error; else the jobs in submit order, from time 0.
Result<Trace> FinishTrace(Trace t, TraceFormat format, const std::string& source,
                          const TraceOptions& options) {
  if (t.rows == 0) return InvalidArgument(source + ": the trace has a header but no rows");
  if (static_cast<double>(t.bad.size()) > options.max_bad_fraction * static_cast<double>(t.rows)) {
    std::string msg = source + ": " + std::to_string(t.bad.size()) + " of " +
                      std::to_string(t.rows) + " rows are malformed (more than " +
                      std::to_string(options.max_bad_fraction * 100.0) +
                      "% allowed by --max-bad-rows); as " + TraceFormatName(format) + ":";
    for (size_t i = 0; i < t.bad.size() && i < 5; ++i) {
      msg += " line " + std::to_string(t.bad[i].line) + ": " + t.bad[i].why + ";";
    }
    if (t.bad.size() > 5) msg += " ...";
    return InvalidArgument(msg);
  }
  if (t.jobs.empty()) return InvalidArgument(source + ": no GPU jobs in the trace");
  std::stable_sort(t.jobs.begin(), t.jobs.end(),
                   [](const TraceJob& a, const TraceJob& b) { return a.submit_ms < b.submit_ms; });
  TimeMs t0 = t.jobs.front().submit_ms;
  for (TraceJob& j : t.jobs) {
    j.epoch_ms = j.submit_ms;
    j.submit_ms -= t0;
  }
  return t;
}

}  // namespace

Result<Trace> ParseTrace(const std::string& text, const std::string& source,
                         const TraceOptions& options) {
  Lines lines = SplitLines(text);
  if (lines.rows.empty()) return InvalidArgument(source + ": the trace is empty");
  const std::string& first = lines.rows.front().second;
  CORRAL_RETURN_IF_ERROR(RejectAggregates(options.format, first, source));
  TraceFormat format = options.format == TraceFormat::kAuto ? Detect(first) : options.format;
  Reader r{source, options, {}};
  r.trace.format = format;
  CORRAL_RETURN_IF_ERROR(ReadTraceRows(format, first, lines, &r));
  return FinishTrace(std::move(r.trace), format, source, options);
}

int64_t InferJobNames(std::vector<TraceJob>* jobs, DurationMs window) {
  struct Burst {
    TimeMs last_submit = 0;
    int64_t n = -1;  // index of the group's current burst; -1: none yet
  };
  std::map<std::pair<std::string, int32_t>, Burst> groups;  // by (queue, GPU count)
  int64_t bursts = 0;
  for (TraceJob& j : *jobs) {
    if (!j.name.empty()) continue;
    Burst& b = groups[{j.queue, j.num_gpus}];
    if (b.n < 0 || j.submit_ms - b.last_submit > window) {
      ++b.n;
      ++bursts;
    }
    b.last_submit = j.submit_ms;
    j.name = "burst-" + j.queue + "-" + std::to_string(j.num_gpus) + "-" + std::to_string(b.n);
    if (j.user.empty()) j.user = j.queue;
  }
  return bursts;
}

Result<Trace> ReadTraceFile(const std::string& path, const TraceOptions& options) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return InvalidArgument("--trace " + path + ": cannot open the file");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ParseTrace(ss.str(), path, options);
}

}  // namespace corral::sim
