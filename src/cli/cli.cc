#include <charconv>
#include <cstdint>
#include <map>
#include <ostream>
#include <random>

#include "cli/commands.h"

namespace corral::cli {
namespace {

struct CommandInfo {
  const char* name;
  int (*run)(const std::vector<std::string>&, CliContext&);
  const char* usage;
  const char* summary;
};

const CommandInfo kCommands[] = {
    {"submit", RunSubmit,
     "corral submit [-f SPEC.yaml] [--gpus N|0.25] [--gpu-memory 10G] [--gpu-isolation "
     "memory|mps]\n"
     "              [--cpus C] [--memory M] [--replicas R|MIN:MAX [--hot-spares K] [--spread | "
     "--max-replicas-per-node "
     "K]]\n"
     "              [--name S]\n"
     "              [--tasks-per-replica T|gpu]\n"
     "              [--queue Q] [--time-limit T] [--priority P] [--preemptible] [--max-restarts "
     "N]\n"
     "              [--checkpoint-signal SIG] [--grace-period D] [--env K=V]... [--workdir D]\n"
     "              [--gpu-model M] [--label K=V]... [--reservation NAME] [--user U (admins)]\n"
     "              [--mail-type END,FAIL|ALL [--mail-user ADDR]] [--parsable] [--dry-run]\n"
     "              [--dataset NAME[@V][:MOUNT]]... [--stage-out DIR:DEST]\n"
     "              [--array 0-999[:STEP][%P]] [--dependency afterok:ID[:ID...],singleton]\n"
     "              [--image REF [--mount SRC:DST[:ro]]... [--container-workdir DIR]\n"
     "               [--container-writable] [--no-container-mount-home]]\n"
     "              [--] CMD [ARGS...]",
     "submit a job"},
    {"run", RunRun,
     "corral run [--gpus N] [--cpus C] [--memory M] [--queue Q] [--time-limit T] ... [--pty]\n"
     "           -- CMD [ARGS...]  (submit's resource flags)",
     "run a command in a new interactive session and wait for it; exits with its code"},
    {"notebook", RunNotebook,
     "corral notebook [--gpus N] [--cpus C] [--memory M] [--queue Q] [--image REF] ...\n"
     "                [-- jupyter-notebook [ARGS...]]  (submit's resource flags)\n"
     "       corral notebook --url ID  (a new URL for a running notebook: each opens once)",
     "start a Jupyter notebook in a new session; prints its URL on the head once it answers"},
    {"exec", RunExec, "corral exec ID [--replica R] [--pty] [--env K=V]... -- CMD [ARGS...]",
     "run a command inside a running job's allocation (its owner, queue admins, admins)"},
    {"jobs", RunJobs,
     "corral jobs [--state S1,S2] [--queue Q] [--user U] [--since D | --all] [--limit N]\n"
     "            [-o json] [--watch] [--expand] [--start]  (arrays fold into one line unless\n"
     "            --expand; --start: pending jobs' estimated start)",
     "list live jobs and those that ended in the last hour (--since D), newest last; --all: every "
     "job"},
    {"show", RunShow, "corral show ID [-o json]", "show one job: spec, runs, events"},
    {"eff", RunEff, "corral eff ID [-o json]",
     "a job's use of what it holds, over time: GPU utilisation and memory, CPUs and memory "
     "(means and peaks), and a verdict (idle GPUs, memory headroom); `seff ID` in Slurm's form"},
    {"wait", RunWait, "corral wait ID... [--timeout D]",
     "wait until jobs finish; exit 0 only if all succeeded (124 on timeout)"},
    {"cancel", RunCancel, "corral cancel ID|ARRAYID_INDEX...",
     "cancel jobs (an array's id: all of it)"},
    {"logs", RunLogs, "corral logs ID [-f] [--stderr] [--replica R] [--task T]",
     "print a job's output; -f follows it until the job ends"},
    {"checkpoint-done", RunCheckpointDone, "corral checkpoint-done [ID]  (default $CORRAL_JOB_ID)",
     "from inside a job: it just saved a checkpoint (preemption then loses less)"},
    {"nodes", RunNodes,
     "corral nodes [-o json] | corral nodes show NAME [-o json] | corral nodes drain|undrain NAME "
     "[--gpu N] [--reason TEXT (with drain)] | corral nodes rm NAME",
     "list nodes (each GPU's health: ok, warn, critical, drained:admin|health); show one node's "
     "GPUs; drain or undrain a node, or one of its GPUs; remove a node with no live run (its "
     "credential is revoked)"},
    {"queues", RunQueues,
     "corral queues [-o json] | corral queues set NAME [--quota N] [--limit M] [--weight W]\n"
     "       [--max-pending-per-user N] [--max-grace DURATION] [--allow-user U]...\n"
     "       [--allow-group G]... (\"\": everyone) [--gpu-sharing on|off] [--idle-timeout D]\n"
     "       (interactive sessions idle this long end; 0: never) [--max-wait D] (a job waiting\n"
     "       this long goes ahead of the others and gets a reservation; 0: the default)\n"
     "       [--max-interactive-gpus-per-user N] (GPUs one user's sessions hold here at once)",
     "list queues; set a queue's quota, limit, weight, longest grace, GPU sharing, sessions' idle "
     "timeout, age bound and who may submit there"},
    {"qos", RunQos,
     "corral qos [-o json] | corral qos set NAME [--min-priority P] [--max-priority P]\n"
     "       [--no-preempt] [--user U]... [--queue Q]... | corral qos delete NAME",
     "list QoS classes (priority ranges and preemption rights); admins set and delete them"},
    {"reservations", RunReservations,
     "corral reservations [-o json] | corral reservations create NAME --nodes N1,N2 --start T\n"
     "       (--duration D | --end T) [--maintenance] [--user U]... [--queue Q]... |\n"
     "       corral reservations delete NAME (T: now, now+D, epoch ms, or YYYY-MM-DDTHH:MM[:SS] "
     "UTC)",
     "list advance reservations and maintenance windows; admins create and delete them"},
    {"datasets", RunDatasets,
     "corral datasets [-o json] |\n"
     "       corral datasets add NAME --source DIR|ARCHIVE|URL [--version V] |\n"
     "       corral datasets show NAME[@V] [-o json] | corral datasets rm NAME[@V] |\n"
     "       corral datasets sources [-o json] |\n"
     "       corral datasets limits [-o json] |\n"
     "       corral datasets source-limit SOURCE --rate RATE [--fetches N] (RATE: 200M; 0: none)",
     "register directories or archives on shared storage, or archives at URLs, as datasets "
     "that jobs declare (--dataset); list "
     "them with their size, files, state and the nodes that cache them; remove unused ones; "
     "show each source's measured stage-in rate; admins budget a source's bandwidth for every "
     "node's stage-ins together"},
    {"serve", RunServe,
     "corral serve NAME [--replicas N | --min-replicas A --max-replicas B] --port PORT\n"
     "       [--health PATH] [--live PATH] [--any-user] [--drain-timeout 30s]\n"
     "       [--wake-timeout 60s] [--target-in-flight 2] [--scale-up-delay 30s]\n"
     "       [--scale-down-delay 10m] [--scale-to-zero-after D (min 0)] [--target-latency D]\n"
     "       [--panic-window 6s] [--panic-threshold-pct 200] [resources as for submit: --gpus,\n"
     "       --cpus, --memory, --queue, --image, --mount, --env ...] [-f SERVICE.yaml] -- CMD\n"
     "       (--port 0: a free port per replica; each replica finds it in $PORT and $CORRAL_PORT)\n"
     "       corral serve update NAME [--ready-timeout 5m] [--image I] [--gpus G] [--env K=V ...]\n"
     "       [-f UPDATE.yaml] [-- NEW CMD]  (a rolling update; rolled back if not ready in time)\n"
     "       corral serve update NAME [--replicas N | --min-replicas A --max-replicas B]\n"
     "       [--target-in-flight N] [--scale-up-delay D] [--scale-down-delay D]\n"
     "       [--scale-to-zero-after D] [--drain-timeout D] [--wake-timeout D]\n"
     "       [--target-latency D] [--panic-window D] [--panic-threshold-pct N]\n"
     "       (its settings: at once, no replica replaced)",
     "run CMD as a service: replicas kept alive, reachable at HEAD/v/NAME/; update its "
     "replicas one at a time"},
    {"services", RunServices,
     "corral services [-o json] | corral services show NAME [-o json] |\n"
     "       corral services scale NAME --replicas N | corral services rm NAME",
     "list services; show one with its replicas; set its replicas (within its min and max; the "
     "autoscaler goes on from there); "
     "remove one (its replicas stop)"},
    {"events", RunEvents, "corral events [-f] [--since REV] [-o json]",
     "print the cluster's changes; -f follows them as they happen"},
    {"top", RunTop, "corral top [--once]",
     "full-screen view of nodes, GPUs and queues, live from the event stream; q quits"},
    {"usage", RunUsage, "corral usage [--by user|queue] [--since 7d] [-o table|json|csv]",
     "GPU-hours, jobs, average wait and preemptions per user or queue over a period"},
    {"slurm", RunSlurm,
     "corral slurm install-shims DIR  (then sbatch, srun, squeue, scancel, sacct, scontrol,\n"
     "       sinfo, sacctmgr, sshare, sprio, seff in DIR run Corral's Slurm-compatible\n"
     "       commands; also `corral sbatch ...`)",
     "Slurm compatibility: install sbatch, squeue, ... as commands"},
    {"token", RunToken,
     "corral token create --user NAME [--role user|queue-admin|admin] [--queue Q]... [--group "
     "G]...\n"
     "       [--expires D]\n"
     "       corral token list | corral token revoke ID...",
     "create, list and revoke access tokens (admins)"},
    {"whoami", RunWhoAmI, "corral whoami [-o json]",
     "who the head takes you for: your user, role and groups, and whether by token or as your "
     "Unix user over the head's local socket"},
    {"admin", RunAdmin, "corral admin backup FILE  (FILE on the head's host)",
     "an online copy of the head's SQLite store (admins; PostgreSQL: its own tools)"},
};

const CommandInfo* FindCommand(const std::string& name) {
  for (const CommandInfo& c : kCommands) {
    if (name == c.name) return &c;
  }
  return nullptr;
}

ErrorCode CodeForStatus(int status) {
  switch (status) {
    case 400:
      return ErrorCode::kInvalidArgument;
    case 401:
      return ErrorCode::kUnauthenticated;
    case 403:
      return ErrorCode::kPermissionDenied;
    case 404:
      return ErrorCode::kNotFound;
    case 409:
      return ErrorCode::kFailedPrecondition;
    case 429:
      return ErrorCode::kResourceExhausted;
    case 502:  // the head could not reach a node's agent for a relayed request
    case 503:
      return ErrorCode::kUnavailable;
    default:
      return ErrorCode::kInternal;
  }
}

}  // namespace

std::string ErrorMessageFromBody(const ApiReply& reply) {
  Json j = Json::parse(reply.body, nullptr, /*allow_exceptions=*/false);
  if (j.is_object()) {
    auto e = j.find("error");
    if (e != j.end() && e->is_object()) {
      auto m = e->find("message");
      if (m != e->end() && m->is_string()) return m->get<std::string>();
    }
  }
  std::string text = reply.body.substr(0, 200);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  return "the head answered HTTP " + std::to_string(reply.status) +
         (text.empty() ? "" : ": " + text);
}

bool IsCliCommand(const std::string& command) {
  return FindCommand(command) != nullptr || IsSlurmCommand(command);
}

std::string CliUsage() {
  std::string out;
  for (const CommandInfo& c : kCommands) {
    std::string name = c.name;
    out +=
        "  " + name + std::string(name.size() < 10 ? 10 - name.size() : 1, ' ') + c.summary + "\n";
  }
  return out;
}

std::string CommandUsage(const std::string& command) {
  const CommandInfo* c = FindCommand(command);
  return c == nullptr ? "" : std::string("usage: ") + c->usage;
}

void PrintError(CliContext& ctx, const std::string& command, const std::string& message) {
  *ctx.err << "corral " << command << ": " << message << "\n";
}

int UsageError(CliContext& ctx, const std::string& command, const std::string& message) {
  PrintError(ctx, command, message);
  *ctx.err << CommandUsage(command) << "\n";
  return kExitUsage;
}

std::optional<JobId> ParseJobId(const std::string& text) {
  JobId id = 0;
  auto r = std::from_chars(text.data(), text.data() + text.size(), id);
  if (text.empty() || r.ec != std::errc{} || r.ptr != text.data() + text.size() || id == 0) {
    return std::nullopt;
  }
  return id;
}

std::string NewRequestId() {
  std::random_device rd;  // /dev/urandom on Linux
  std::string id;
  constexpr char kHex[] = "0123456789abcdef";
  for (int i = 0; i < 8; ++i) {
    uint32_t v = rd();
    for (int b = 0; b < 4; ++b) id.push_back(kHex[(v >> (b * 8)) & 0xf]);
  }
  return id;
}

Result<ApiReply> ApiClient::Call(const std::string& method, const std::string& path,
                                 const std::string& body) {
  if (!transport_) {
    auto t = ctx_.connect();
    if (!t.ok()) return t.status();
    transport_ = *t;
  }
  auto reply = transport_->Call(method, path, body);
  if (!reply.ok()) {
    return Status(ErrorCode::kUnavailable,
                  "cannot reach the head at " + ctx_.addr + ": " + reply.status().message());
  }
  if (reply->status == 403) {
    return Status(ErrorCode::kPermissionDenied,
                  "permission denied: " + ErrorMessageFromBody(*reply));
  }
  if (reply->status >= 400)
    return Status(CodeForStatus(reply->status), ErrorMessageFromBody(*reply));
  return reply;
}

Result<Json> ApiClient::CallJson(const std::string& method, const std::string& path,
                                 const std::string& body) {
  auto reply = Call(method, path, body);
  if (!reply.ok()) return reply.status();
  Json j = Json::parse(reply->body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) {
    return Internal("the head at " + ctx_.addr + " answered " + method + " " + path +
                    " with something that is not a JSON object: " + reply->body.substr(0, 200));
  }
  return j;
}

int RunCommand(const std::string& command, const std::vector<std::string>& args, CliContext& ctx) {
  const CommandInfo* c = FindCommand(command);
  if (c == nullptr && IsSlurmCommand(command)) {
    static const std::map<std::string, int (*)(const std::vector<std::string>&, CliContext&)>
        kSlurm = {{"sbatch", RunSbatch},   {"srun", RunSrun},     {"squeue", RunSqueue},
                  {"scancel", RunScancel}, {"sacct", RunSacct},   {"scontrol", RunScontrol},
                  {"sinfo", RunSinfo},     {"salloc", RunSalloc}, {"seff", RunSeff}};
    // The accounting views (slurm_accounts.cc).
    static const std::map<std::string, int (*)(const std::vector<std::string>&, CliContext&)>
        kAccounting = {{"sacctmgr", RunSacctmgr}, {"sshare", RunSshare}, {"sprio", RunSprio}};
    if (auto a = kAccounting.find(command); a != kAccounting.end()) return a->second(args, ctx);
    return kSlurm.at(command)(args, ctx);
  }
  if (c == nullptr) {
    *ctx.err << "corral: unknown command '" << command << "'; client commands:\n" << CliUsage();
    return kExitUsage;
  }
  return c->run(args, ctx);
}

}  // namespace corral::cli
