// corral eff and seff: a job's use of what it held, from its runs' usage series
// (core/job_efficiency.h): means, peaks and the verdict; and the line `corral show` prints.
#include <cmath>
#include <cstdio>
#include <sstream>

#include "cli/commands.h"
#include "cli/slurm_errors.h"
#include "cli/table.h"
#include "core/job_efficiency.h"
#include "slurm/format.h"

namespace corral::cli {
namespace {

std::string EffBytes(double bytes) {
  char buf[32];
  const double mib = bytes / (1024.0 * 1024.0);
  if (mib >= 1024) {
    std::snprintf(buf, sizeof buf, "%.2f GB", mib / 1024);
  } else {
    std::snprintf(buf, sizeof buf, "%.2f MB", mib);
  }
  return buf;
}

std::string EffPercent(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f%%", v);
  return buf;
}

// The memory of one GPU of the job's first placement, from the head's node listing (0: unknown).
int64_t GpuMemoryOf(ApiClient& api, const Job& job) {
  const Run* run = job.CurrentRun();
  if (run == nullptr || run->placement.empty() || run->placement[0].gpus.empty()) return 0;
  auto reply = api.CallJson("GET", "/v1/nodes/" + run->placement[0].node);
  if (!reply.ok() || !reply->contains("node")) return 0;
  auto node = NodeFromJson((*reply)["node"]);
  if (!node.ok()) return 0;
  for (const Gpu& g : node->gpus) {
    if (g.index == run->placement[0].gpus[0]) return g.memory_mb * 1024 * 1024;
  }
  return 0;
}

// The job named by the single positional argument, or an exit code (the error printed).
struct FetchedJob {
  Job job;
  int64_t gpu_memory = 0;
};
Result<FetchedJob> FetchJobForEff(CliContext& ctx, const std::string& text) {
  auto id = ParseJobId(text);
  if (!id) {
    return InvalidArgument("job ID: got '" + text + "', want a positive integer job id");
  }
  ApiClient api(ctx);
  auto reply = api.CallJson("GET", "/v1/jobs/" + std::to_string(*id));
  if (!reply.ok()) return reply.status();
  auto it = reply->find("job");
  if (it == reply->end()) return Internal("the head's answer has no 'job'");
  auto job = JobFromJson(*it);
  if (!job.ok()) return Internal("cannot read the job from the head: " + job.status().message());
  FetchedJob out{std::move(*job), 0};
  out.gpu_memory = GpuMemoryOf(api, out.job);
  return out;
}

Json EffJson(const Job& job, const JobEfficiency& e) {
  Json verdict = Json::array();
  for (const EfficiencyNote& n : e.verdict) {
    verdict.push_back({{"finding", EfficiencyFindingName(n.finding)}, {"text", n.text}});
  }
  return Json{
      {"job", job.id},
      {"state", JobStateName(job.state)},
      {"samples", e.use.samples},
      {"wall_ms", e.wall_ms},
      {"replicas", e.replicas},
      {"gpus_per_replica", e.asked.gpus},
      {"gpu_util", {{"mean", e.use.gpu_util}, {"peak", e.use.gpu_util_max}}},
      {"gpu_memory_bytes", {{"mean", e.use.gpu_mem}, {"peak", e.use.gpu_mem_max}}},
      {"cpu_milli",
       {{"mean", e.use.cpu_milli}, {"peak", e.use.cpu_milli_max}, {"asked", e.asked.cpu_milli}}},
      {"memory_bytes",
       {{"mean", e.use.mem}, {"peak", e.peak_memory_bytes}, {"asked", e.asked.memory}}},
      {"cpu_ms", e.cpu_ms},
      {"verdict", verdict}};
}

std::string RenderEff(const Job& job, const JobEfficiency& e) {
  std::ostringstream o;
  auto kv = [&](const std::string& k, const std::string& v) {
    o << "  " << k << ":" << std::string(k.size() < 12 ? 12 - k.size() : 1, ' ') << v << "\n";
  };
  char buf[160];
  o << "Job " << job.id << (job.spec.name.empty() ? "" : " (" + job.spec.name + ")") << ": "
    << JobStateName(job.state) << "\n";
  kv("samples", std::to_string(e.use.samples) + " over " + FormatAge(e.wall_ms) + " of running");
  if (e.asked.gpus > 0) {
    std::snprintf(buf, sizeof buf, "mean %.0f%%, peak %d%%", e.use.gpu_util, e.use.gpu_util_max);
    kv("GPU util", buf);
    kv("GPU memory",
       "mean " + EffBytes(e.use.gpu_mem) + ", peak " +
           EffBytes(static_cast<double>(e.use.gpu_mem_max)) +
           (e.asked.gpu_memory > 0
                ? " (a GPU has " + EffBytes(static_cast<double>(e.asked.gpu_memory)) + ")"
                : ""));
  }
  std::snprintf(buf, sizeof buf, "mean %.2f, peak %.2f of %s asked", e.use.cpu_milli / 1000.0,
                e.use.cpu_milli_max / 1000.0, FormatCpus(e.asked.cpu_milli).c_str());
  kv("CPUs", buf);
  kv("memory",
     "mean " + EffBytes(e.use.mem) + ", peak " +
         EffBytes(static_cast<double>(e.peak_memory_bytes)) +
         (e.asked.memory > 0 ? " of " + EffBytes(static_cast<double>(e.asked.memory)) + " asked"
                             : " (no limit asked)"));
  for (const EfficiencyNote& n : e.verdict) kv("verdict", n.text);
  return o.str();
}

// Slurm's seff, with jobstats' GPU lines after it.
std::string RenderSeff(const Job& job, const JobEfficiency& e) {
  std::ostringstream o;
  const int32_t cores_per_replica = std::max(1, job.spec.per_replica.cpu_milli / 1000);
  const int64_t core_wall_ms = e.wall_ms * cores_per_replica * std::max(1, e.replicas);
  const double cpu_eff =
      core_wall_ms > 0 ? 100.0 * static_cast<double>(e.cpu_ms) / core_wall_ms : 0;
  o << "Job ID: " << slurm::SlurmJobId(job) << "\n";
  o << "Cluster: corral\n";
  o << "User/Group: " << job.owner << "/" << job.owner << "\n";
  o << "State: " << slurm::SlurmState(job)
    << (IsTerminal(job.state) ? " (exit code " + std::to_string(job.exit_code) + ")" : "") << "\n";
  if (e.replicas > 1) {
    o << "Nodes: " << e.replicas << "\n";
    o << "Cores per node: " << cores_per_replica << "\n";
  } else {
    o << "Cores: " << cores_per_replica << "\n";
  }
  o << "CPU Utilized: " << slurm::SacctTime(e.cpu_ms) << "\n";
  o << "CPU Efficiency: " << EffPercent(cpu_eff) << " of " << slurm::SacctTime(core_wall_ms)
    << " core-walltime\n";
  o << "Job Wall-clock time: " << slurm::SacctTime(e.wall_ms) << "\n";
  o << "Memory Utilized: " << EffBytes(static_cast<double>(e.peak_memory_bytes)) << "\n";
  const double asked = static_cast<double>(e.asked.memory) * std::max(1, e.replicas);
  o << "Memory Efficiency: "
    << EffPercent(asked > 0 ? 100.0 * static_cast<double>(e.peak_memory_bytes) / asked : 0)
    << " of " << EffBytes(asked) << "\n";
  if (e.asked.gpus > 0) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%g", e.asked.gpus * std::max(1, e.replicas));
    o << "GPUs: " << buf << "\n";
    o << "GPU Utilization: " << EffPercent(e.use.gpu_util) << " (peak " << e.use.gpu_util_max
      << "%)\n";
    o << "GPU Memory Utilized: " << EffBytes(e.use.gpu_mem) << " (peak "
      << EffBytes(static_cast<double>(e.use.gpu_mem_max)) << ")\n";
  }
  for (const EfficiencyNote& n : e.verdict) o << "Verdict: " << n.text << "\n";
  return o.str();
}

}  // namespace

std::string EfficiencyLine(const Job& job, TimeMs now) {
  const JobEfficiency e = EfficiencyOf(job, now);
  if (e.use.samples == 0) return "";
  char buf[200];
  std::snprintf(buf, sizeof buf, "GPU %.0f%% (peak %d%%), CPUs %.2f, memory %s (peak %s); %s",
                e.use.gpu_util, e.use.gpu_util_max, e.use.cpu_milli / 1000.0,
                EffBytes(e.use.mem).c_str(),
                EffBytes(static_cast<double>(e.peak_memory_bytes)).c_str(),
                EfficiencyFindingName(e.verdict.front().finding));
  return buf;
}

int RunEff(const std::vector<std::string>& argv, CliContext& ctx) {
  auto parsed = ParseArgs(argv, {{"output", 'o', true}}, false);
  if (!parsed.ok()) return UsageError(ctx, "eff", parsed.status().message());
  const ParsedArgs& args = *parsed;
  if (args.Has("help")) {
    *ctx.out << CommandUsage("eff") << "\n";
    return kExitOk;
  }
  if (args.positional.size() != 1) return UsageError(ctx, "eff", "want exactly one job ID");
  if (!ParseJobId(args.positional[0])) {
    return UsageError(ctx, "eff", "not a job ID: '" + args.positional[0] + "'");
  }
  std::string o = args.Has("output") ? args.Get("output") : "table";
  if (o != "json" && o != "table") {
    return UsageError(ctx, "eff", "flag -o: got \"" + o + "\", want json or table");
  }
  auto fetched = FetchJobForEff(ctx, args.positional[0]);
  if (!fetched.ok()) {
    PrintError(ctx, "eff", fetched.status().message());
    return kExitError;
  }
  const JobEfficiency e = EfficiencyOf(fetched->job, ctx.now(), fetched->gpu_memory);
  if (o == "json") {
    *ctx.out << EffJson(fetched->job, e).dump(2) << "\n";
  } else {
    *ctx.out << RenderEff(fetched->job, e);
  }
  return kExitOk;
}

int RunSeff(const std::vector<std::string>& argv, CliContext& ctx) {
  if (argv.size() == 1 && (argv[0] == "-h" || argv[0] == "--help")) {
    *ctx.out << "Usage: seff [Options] <Jobid>\n";
    return kExitOk;
  }
  if (argv.size() != 1) return SlurmError(ctx, "seff", "want exactly one job id");
  auto fetched = FetchJobForEff(ctx, argv[0]);
  if (!fetched.ok()) return SlurmError(ctx, "seff", fetched.status().message());
  *ctx.out << RenderSeff(fetched->job, EfficiencyOf(fetched->job, ctx.now(), fetched->gpu_memory));
  return kExitOk;
}

}  // namespace corral::cli
