// Each head command (head/commands.h) as HTTP carries it: one decoder per command, which checks
// every field and names the one that is wrong, and the JSON of each answer. The route table
// (api_service.cc) joins them to their paths.
#pragma once

#include <string>
#include <vector>

#include "core/codec.h"
#include "head/commands.h"
#include "net/http.h"

namespace corral::api {

// The variable parts of a route's path pattern, in order ("/v1/jobs/{id}/cancel": the id).
using PathArgs = std::vector<std::string>;

template <typename C>
using Decoder = Result<C> (*)(const net::HttpRequest& req, const PathArgs& args);

// A command with no fields.
template <typename C>
Result<C> NoFields(const net::HttpRequest&, const PathArgs&) {
  return C{};
}

Result<head::SubmitJob> DecodeSubmitJob(const net::HttpRequest& req, const PathArgs& args);
Result<head::ListJobs> DecodeListJobs(const net::HttpRequest& req, const PathArgs& args);
Result<head::GetJob> DecodeGetJob(const net::HttpRequest& req, const PathArgs& args);
// GET /v1/jobs/{id}/logs?replica=&task=&step=&stream=&offset=&max=: the command that finds the
// output, and what the agent is asked for there.
struct LogRead {
  head::LocateLogs locate;
  std::string stream = "stdout";  // or stderr
  int64_t offset = 0;
  int64_t max = 1 << 16;
};
Result<LogRead> DecodeLogRead(const net::HttpRequest& req, const PathArgs& args);
Result<head::CancelJob> DecodeCancelJob(const net::HttpRequest& req, const PathArgs& args);
Result<head::SignalJob> DecodeSignalJob(const net::HttpRequest& req, const PathArgs& args);
Result<head::RequeueJob> DecodeRequeueJob(const net::HttpRequest& req, const PathArgs& args);
Result<head::HoldJob> DecodeHoldJob(const net::HttpRequest& req, const PathArgs& args);
Result<head::HoldJob> DecodeReleaseJob(const net::HttpRequest& req, const PathArgs& args);
Result<head::UpdateJob> DecodeUpdateJob(const net::HttpRequest& req, const PathArgs& args);
Result<head::ReportCheckpoint> DecodeReportCheckpoint(const net::HttpRequest& req,
                                                      const PathArgs& args);
Result<head::StartStep> DecodeStartStep(const net::HttpRequest& req, const PathArgs& args);
Result<head::GetStep> DecodeGetStep(const net::HttpRequest& req, const PathArgs& args);
// POST /v1/jobs/{id}/exec: the replica from the body ({"replica": R, ...}); the rest of the
// body is the agent's (exec_proxy.h).
Result<head::OpenExec> DecodeOpenExec(const net::HttpRequest& req, const PathArgs& args);
// POST /v1/jobs/{id}/touch?typed=1
Result<head::TouchSession> DecodeTouchSession(const net::HttpRequest& req, const PathArgs& args);
Result<head::GetUsage> DecodeGetUsage(const net::HttpRequest& req, const PathArgs& args);
Result<head::GetHistory> DecodeGetHistory(const net::HttpRequest& req, const PathArgs& args);
Result<head::GetClusterSeries> DecodeGetClusterSeries(const net::HttpRequest& req,
                                                      const PathArgs& args);
Result<head::GetNode> DecodeGetNode(const net::HttpRequest& req, const PathArgs& args);
// DELETE /v1/nodes/{name}
Result<head::RemoveNode> DecodeRemoveNode(const net::HttpRequest& req, const PathArgs& args);
Result<head::SetDrain> DecodeDrain(const net::HttpRequest& req, const PathArgs& args);
Result<head::SetGpuDrain> DecodeGpuDrainOn(const net::HttpRequest& req, const PathArgs& args);
Result<head::SetGpuDrain> DecodeGpuDrainOff(const net::HttpRequest& req, const PathArgs& args);
Result<head::SetDrain> DecodeUndrain(const net::HttpRequest& req, const PathArgs& args);
Result<head::SetQueue> DecodeSetQueue(const net::HttpRequest& req, const PathArgs& args);
// PUT /v1/qos/{name}: the whole class; fields left out take their defaults (core/qos.h).
Result<head::SetQos> DecodeSetQos(const net::HttpRequest& req, const PathArgs& args);
Result<head::DeleteQos> DecodeDeleteQos(const net::HttpRequest& req, const PathArgs& args);
Result<head::CreateReservation> DecodeCreateReservation(const net::HttpRequest& req,
                                                        const PathArgs& args);
Result<head::AddDataset> DecodeAddDataset(const net::HttpRequest& req, const PathArgs& args);
// {"source": S, "rate": bytes per second, "fetches": N}; rate and fetches default to 0.
Result<head::SetSourceLimit> DecodeSetSourceLimit(const net::HttpRequest& req,
                                                  const PathArgs& args);
Result<head::GetDataset> DecodeGetDataset(const net::HttpRequest& req, const PathArgs& args);
Result<head::RemoveDataset> DecodeRemoveDataset(const net::HttpRequest& req, const PathArgs& args);
Result<head::DeleteReservation> DecodeDeleteReservation(const net::HttpRequest& req,
                                                        const PathArgs& args);
Result<head::CreateToken> DecodeCreateToken(const net::HttpRequest& req, const PathArgs& args);
Result<head::RevokeToken> DecodeRevokeToken(const net::HttpRequest& req, const PathArgs& args);
Result<head::BackupStore> DecodeBackupStore(const net::HttpRequest& req, const PathArgs& args);
// As server-sent events (WantsEventStream) the wait defaults to 25 s, otherwise to none.
Result<head::WatchEvents> DecodeWatchEvents(const net::HttpRequest& req, const PathArgs& args);
Result<head::RegisterAgent> DecodeRegisterAgent(const net::HttpRequest& req, const PathArgs& args);
Result<head::SyncAgent> DecodeSyncAgent(const net::HttpRequest& req, const PathArgs& args);

// Whether the caller asked GET /v1/events for server-sent events.
bool WantsEventStream(const net::HttpRequest& req);

// Answers, as docs/api.md shows them.
Json JobAnswer(const Job& job);  // {"job": ...}
Json JobsPageAnswer(const head::ListJobs& command,
                    const std::vector<Job>& jobs);  // {"jobs": [...], "next_after": id|null}
Json StepAnswer(const Step& step);                  // {"step": ...}
Json SessionAnswer(const head::SessionStatus& s);   // {"job": ..., "idle_stop_at": ms|null}
Json UsageAnswer(const UsageReport& report);
Json HistoryAnswer(const head::History& history);
Json ClusterSeriesAnswer(const head::ClusterSeriesView& series);
Json NodesAnswer(const std::vector<NodeView>& nodes);  // {"nodes": [...]}
Json NodeAnswer(const NodeView& node);                 // {"node": ...}
Json NodeRecordAnswer(const Node& node);  // {"node": ...}, as registered, without its use
Json QueuesAnswer(const std::vector<QueueView>& queues);
Json QueueAnswer(const QueueConfig& queue);
Json QosListAnswer(const std::vector<QosClass>& classes);                 // {"qos": [...]}
Json QosAnswer(const QosClass& qos);                                      // {"qos": ...}
Json ReservationListAnswer(const std::vector<NodeReservationSpec>& all);  // {"reservations"}
Json ReservationAnswer(const NodeReservationSpec& r);                     // {"reservation"}
Json DatasetListAnswer(const head::DatasetListing& all);                  // {"datasets", "sources"}
Json DatasetAnswer(const DatasetView& d);                                 // {"dataset"}
Json SourceBudgetAnswer(const SourceBudget& b);                           // {"limit"}
Json SourceBudgetListAnswer(const std::vector<SourceBudget>& all);        // {"limits": [...]}
Json TokensAnswer(const std::vector<head::Credential>& tokens);
Json NewTokenAnswer(const head::NewToken& token);  // the secret, shown once
Json RevokedAnswer(const head::Credential& token);
Json BackupAnswer(const store::BackupInfo& backup);
Json RegisterAnswer(const RegisterResponse& r);
Json SyncAnswer(const SyncResponse& r);

// Query parameter `key` as an integer in [lo, hi]; `def` when absent.
Result<int64_t> QueryInt(const net::HttpRequest& req, const std::string& key, int64_t def,
                         int64_t lo, int64_t hi);
// A job id from the path.
Result<JobId> PathJobId(const std::string& text);

}  // namespace corral::api
