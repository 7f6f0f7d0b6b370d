// Internal to src/cli: the commands behind RunCommand, and the helper they share to call the
// API and turn its errors into messages.
#pragma once

#include <deque>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "cli/args.h"
#include "cli/cli.h"
#include "core/codec.h"
#include "core/event_page.h"
#include "core/usage.h"
#include "slurm/options.h"

namespace corral::cli {

constexpr int kExitOk = 0;
constexpr int kExitError = 1;
constexpr int kExitUsage = 2;
constexpr int kExitTimeout = 124;

// Calls the head on behalf of one command. Errors come back as a Status whose message is
// ready to print: "cannot reach the head at ADDR: ...", or the server's own error message.
class ApiClient {
 public:
  explicit ApiClient(CliContext& ctx) : ctx_(ctx) {}
  // Connects lazily on the first call.
  Result<ApiReply> Call(const std::string& method, const std::string& path,
                        const std::string& body = "");
  // Call and parse a JSON object body.
  Result<Json> CallJson(const std::string& method, const std::string& path,
                        const std::string& body = "");

 private:
  CliContext& ctx_;
  std::shared_ptr<ApiTransport> transport_;
};

// The message of an error answer ({"error": {"message": ...}}), else its status and first bytes.
std::string ErrorMessageFromBody(const ApiReply& reply);
// Prints "corral CMD: message" to err.
void PrintError(CliContext& ctx, const std::string& command, const std::string& message);
// Prints the usage error and the command's usage line; returns kExitUsage.
int UsageError(CliContext& ctx, const std::string& command, const std::string& message);
std::string CommandUsage(const std::string& command);
// Parses "7" as a job id.
std::optional<JobId> ParseJobId(const std::string& text);
// A fresh id for one submission (128 random bits, hex): retries of the call carry the same
// one, so a head that already took it answers the job it made (HeadCore::Submit).
std::string NewRequestId();

// Builds the user-facing spec JSON (docs/api.md) from submit's flags, a -f file and the
// command; validates nothing (ParseJobSpec does). Errors name the flag or the file.
Result<Json> BuildSubmitSpec(const ParsedArgs& args, const std::string& cwd, const EnvLookup& env);
// Reads a YAML or JSON job spec file into JSON.
Result<Json> ReadSpecFile(const std::string& path);

int RunSubmit(const std::vector<std::string>& args, CliContext& ctx);
int RunAdmin(const std::vector<std::string>& args, CliContext& ctx);
int RunJobs(const std::vector<std::string>& args, CliContext& ctx);
int RunShow(const std::vector<std::string>& args, CliContext& ctx);
// A job's efficiency (efficiency.cc): corral eff, Slurm's seff, and the line corral show prints
// ("" before its first sample).
int RunEff(const std::vector<std::string>& args, CliContext& ctx);
int RunSeff(const std::vector<std::string>& args, CliContext& ctx);
std::string EfficiencyLine(const Job& job, TimeMs now);
int RunWait(const std::vector<std::string>& args, CliContext& ctx);
int RunCancel(const std::vector<std::string>& args, CliContext& ctx);
int RunCheckpointDone(const std::vector<std::string>& args, CliContext& ctx);
int RunLogs(const std::vector<std::string>& args, CliContext& ctx);
int RunNodes(const std::vector<std::string>& args, CliContext& ctx);
int RunQueues(const std::vector<std::string>& args, CliContext& ctx);
int RunQos(const std::vector<std::string>& args, CliContext& ctx);
int RunReservations(const std::vector<std::string>& args, CliContext& ctx);
int RunDatasets(const std::vector<std::string>& args, CliContext& ctx);
// `corral datasets limits` and `corral datasets source-limit` (dataset_limits.cc); `args` as
// RunDatasets parsed them.
int RunDatasetLimits(const ParsedArgs& args, CliContext& ctx);
// Services (services.cc): corral serve, corral services.
int RunServe(const std::vector<std::string>& args, CliContext& ctx);
int RunServices(const std::vector<std::string>& args, CliContext& ctx);
int RunToken(const std::vector<std::string>& args, CliContext& ctx);
int RunWhoAmI(const std::vector<std::string>& args, CliContext& ctx);
int RunEvents(const std::vector<std::string>& args, CliContext& ctx);
int RunUsage(const std::vector<std::string>& args, CliContext& ctx);
int RunTop(const std::vector<std::string>& args, CliContext& ctx);
// Interactive sessions (interactive.cc): a command inside a running job, and `corral run`.
int RunExec(const std::vector<std::string>& args, CliContext& ctx);
int RunRun(const std::vector<std::string>& args, CliContext& ctx);
int RunNotebook(const std::vector<std::string>& args, CliContext& ctx);
// A job spec (user-facing JSON) made an interactive session's: kind interactive, and a
// command that only holds the allocation.
Json MakeSessionSpec(Json spec);
// Why an ended job ended, as its last run (else its last event) says.
std::string EndReason(const Job& job);
// Submits session `spec` (as `user`, "": the caller) and waits until it runs, printing why it
// waits; the job id. Fails at once, the reason printed, when it can never start; cancels it
// when interrupted (SIGINT, SIGTERM, SIGHUP). Keeps it alive meanwhile (touches).
Result<JobId> StartSession(const Json& spec, CliContext& ctx, const std::string& name,
                           const std::string& user = "");
// StartSession, then `command` in it (exec_client.h), then ends it; the command's exit code.
// `name`: the command for messages (run, srun).
int RunInteractiveSession(const Json& spec, const std::vector<std::string>& command, bool pty,
                          CliContext& ctx, const std::string& name, const std::string& user = "");
// submit's flags (run takes the same resources).
const std::vector<FlagDef>& SubmitFlags();

// Pages through the jobs matching `query` ("&state=...&user=..."), ascending id; keeps the
// newest `limit` (0: all).
Result<std::deque<Json>> FetchJobs(CliContext& ctx, const std::string& query, size_t limit);

// The Slurm commands (slurm_submit.cc, slurm_query.cc), run as `sbatch ...` through a shim
// or as `corral sbatch ...`.
int RunSlurm(const std::vector<std::string>& args, CliContext& ctx);  // corral slurm install-shims
int RunSbatch(const std::vector<std::string>& args, CliContext& ctx);
int RunSrun(const std::vector<std::string>& args, CliContext& ctx);
int RunSqueue(const std::vector<std::string>& args, CliContext& ctx);
int RunScancel(const std::vector<std::string>& args, CliContext& ctx);
int RunSacct(const std::vector<std::string>& args, CliContext& ctx);
int RunScontrol(const std::vector<std::string>& args, CliContext& ctx);
int RunSinfo(const std::vector<std::string>& args, CliContext& ctx);
// Slurm's accounting views (slurm_accounts.cc): queues as accounts, fair share, priorities.
int RunSacctmgr(const std::vector<std::string>& args, CliContext& ctx);
int RunSshare(const std::vector<std::string>& args, CliContext& ctx);
int RunSprio(const std::vector<std::string>& args, CliContext& ctx);
// scontrol update JobId=... (slurm_update.cc): the words after "update".
int RunScontrolUpdate(const std::vector<std::string>& words, CliContext& ctx);
// salloc: an interactive session held while a local shell runs, in which srun runs its steps
// inside the allocation (slurm_interactive.cc); srun there.
int RunSalloc(const std::vector<std::string>& args, CliContext& ctx);
int RunSallocStep(const slurm::ParsedOptions& opts, bool pty, CliContext& ctx);
// srun inside an allocation: a step of one node, run here (slurm_step.cc).
int RunLocalStep(const slurm::ParsedOptions& opts, CliContext& ctx);
int RunRemoteStep(const slurm::ParsedOptions& opts, int64_t nodes, CliContext& ctx);
// Inside a batch job: talk to the head its agent reaches with the job's own step credential
// (CORRAL_STEP_HEAD, CORRAL_STEP_TOKEN, CORRAL_STEP_CA) instead of the user's config.
void UseStepCredential(CliContext& ctx);
// Jobs decoded from the head's JSON; errors name the job.
Result<std::vector<Job>> DecodeJobs(const std::deque<Json>& raw);

// `corral jobs` without the flag parsing: the matching jobs as JSON on out, or as a table.
int ListJobsJson(CliContext& ctx, const std::string& query, size_t limit);
int ListJobsTable(CliContext& ctx, const std::string& query, size_t limit, bool expand,
                  std::string* table, bool start = false);
// One answer of the event stream: the changes after `since` (at most `max`), held by the head
// up to `wait_ms` while there are none.
Result<EventPage> ReadEvents(ApiClient& api, uint64_t since, int32_t max, int64_t wait_ms);
// Draws `render`'s table, then again after every change the event stream reports, until
// `updates` redraws (-1: until interrupted) or an error.
int WatchTable(CliContext& ctx, const std::string& command, int64_t updates,
               const std::function<int(std::string*)>& render);

// Renderers, shared with tests.
// Arrays fold into one line per array unless `expand`.
// With `start`, a START column: a pending job's estimated start ("in 5m", "now"; "N/A": none).
std::string RenderJobsTable(const std::vector<Job>& jobs, TimeMs now, bool expand = false,
                            bool start = false);
// "12" or, for an array element, "12_5".
std::string JobRef(const Job& j);
// A job reference as users write it: "ID" (an array's id means the array) or "ARRAYID_INDEX".
struct JobRefId {
  JobId id = 0;
  bool element = false;  // named as ARRAYID_INDEX
};
Result<JobRefId> ResolveJobRef(ApiClient& api, const std::string& text);
std::string RenderJob(const Job& job, TimeMs now, bool utc);
// The head's answers to GET /v1/nodes and /v1/queues, read back into the types it answers with.
Result<std::vector<NodeView>> NodesFromAnswer(const Json& answer);
Result<std::vector<QueueView>> QueuesFromAnswer(const Json& answer);
std::string RenderNodesTable(const std::vector<NodeView>& nodes);
std::string RenderQueuesTable(const std::vector<QueueView>& queues);
// A GET /v1/usage answer as a table (a TOTAL row last) or as CSV with a header line.
std::string RenderUsageTable(const UsageReport& report);
std::string RenderUsageCsv(const UsageReport& report);
// What `corral top` shows: the head's answers to GET /v1/nodes and /v1/queues.
struct TopSnapshot {
  std::vector<NodeView> nodes;
  std::vector<QueueView> queues;
  uint64_t revision = 0;  // the last change seen on the event stream
  std::string error;      // why the last refresh failed; empty: it did not
};
// One screen of `corral top`, cut to `width` columns and `height` lines (-1: no limit).
std::vector<std::string> RenderTop(const TopSnapshot& snapshot, int width, int height);

// The array under `key` in one of the head's answers; an error names the key.
Result<Json> ArrayIn(const Json& answer, const char* key);

}  // namespace corral::cli
