#include "api/command_http.h"

#include <algorithm>
#include <charconv>
#include <limits>

#include "api/step_request.h"
#include "core/spec.h"
#include "core/usage.h"

namespace corral::api {
namespace {

using net::HttpRequest;

bool ParseU64(const std::string& s, uint64_t* out) {
  auto r = std::from_chars(s.data(), s.data() + s.size(), *out);
  return !s.empty() && r.ec == std::errc{} && r.ptr == s.data() + s.size();
}

Result<Json> BodyObject(const HttpRequest& req, const char* want) {
  Json body = Json::parse(req.body, nullptr, false);
  if (body.is_discarded() || !body.is_object()) {
    return InvalidArgument(std::string("body: want a JSON object") + want);
  }
  return body;
}

// A credential as the API shows it: never its hash.
Json CredentialJson(const head::Credential& c) {
  Json j = corral::ToJson(c);
  j.erase("hash");
  return j;
}

}  // namespace

Result<int64_t> QueryInt(const HttpRequest& req, const std::string& key, int64_t def, int64_t lo,
                         int64_t hi) {
  auto it = req.query.find(key);
  if (it == req.query.end()) return def;
  uint64_t v = 0;
  if (!ParseU64(it->second, &v) || static_cast<int64_t>(v) < lo || static_cast<int64_t>(v) > hi) {
    return InvalidArgument("query '" + key + "': got \"" + it->second +
                           "\", want an integer from " + std::to_string(lo) + " to " +
                           std::to_string(hi));
  }
  return static_cast<int64_t>(v);
}

Result<JobId> PathJobId(const std::string& text) {
  uint64_t id = 0;
  if (!ParseU64(text, &id)) return InvalidArgument("job id: got \"" + text + "\", want a number");
  return static_cast<JobId>(id);
}

// --- jobs ---

Result<head::SubmitJob> DecodeSubmitJob(const HttpRequest& req, const PathArgs&) {
  auto body = BodyObject(req, " {\"spec\": ..., \"user\": ...}");
  if (!body.ok()) return body.status();
  for (auto it = body->begin(); it != body->end(); ++it) {
    if (it.key() != "spec" && it.key() != "user" && it.key() != "request_id") {
      return InvalidArgument("unknown field '" + it.key() + "'; want spec, user, request_id");
    }
  }
  auto spec = ParseJobSpec(body->value("spec", Json()));
  if (!spec.ok()) return spec.status();
  head::SubmitJob c{std::move(*spec), "", ""};
  if (auto u = body->find("user"); u != body->end()) {
    if (!u->is_string()) return InvalidArgument("field 'user': want a string");
    c.user = u->get<std::string>();
  }
  if (auto r = body->find("request_id"); r != body->end()) {
    if (!r->is_string()) return InvalidArgument("field 'request_id': want a string");
    c.request_id = r->get<std::string>();
  }
  return c;
}

Result<head::ListJobs> DecodeListJobs(const HttpRequest& req, const PathArgs&) {
  head::ListJobs c;
  head::JobFilter& f = c.filter;
  if (auto it = req.query.find("state"); it != req.query.end() && !it->second.empty()) {
    size_t i = 0;
    const std::string& v = it->second;
    while (i <= v.size()) {
      size_t j = v.find(',', i);
      if (j == std::string::npos) j = v.size();
      std::string name = v.substr(i, j - i);
      JobState st;
      if (!ParseJobState(name, &st)) {
        return InvalidArgument("query 'state': got \"" + name +
                               "\", want pending, scheduled, running, succeeded, failed or "
                               "cancelled");
      }
      f.states.insert(st);
      i = j + 1;
    }
  }
  if (auto it = req.query.find("queue"); it != req.query.end()) f.queue = it->second;
  if (auto it = req.query.find("user"); it != req.query.end()) f.user = it->second;
  auto array = QueryInt(req, "array", 0, 0, INT64_MAX);
  if (!array.ok()) return array.status();
  f.array_id = static_cast<JobId>(*array);
  auto ended_since = QueryInt(req, "ended_since", 0, 0, INT64_MAX);
  if (!ended_since.ok()) return ended_since.status();
  f.ended_since = *ended_since;
  auto limit = QueryInt(req, "limit", 1000, 1, 100000);
  if (!limit.ok()) return limit.status();
  auto after = QueryInt(req, "after", 0, 0, INT64_MAX);
  if (!after.ok()) return after.status();
  f.limit = static_cast<int32_t>(*limit);
  f.after = static_cast<JobId>(*after);
  return c;
}

Result<head::GetJob> DecodeGetJob(const HttpRequest&, const PathArgs& args) {
  auto id = PathJobId(args.at(0));
  if (!id.ok()) return id.status();
  return head::GetJob{*id};
}

Result<LogRead> DecodeLogRead(const HttpRequest& req, const PathArgs& args) {
  auto id = PathJobId(args.at(0));
  if (!id.ok()) return id.status();
  LogRead out;
  out.locate.id = *id;
  if (auto s = req.query.find("stream"); s != req.query.end()) out.stream = s->second;
  if (out.stream != "stdout" && out.stream != "stderr") {
    return InvalidArgument("query 'stream': got \"" + out.stream + "\", want stdout or stderr");
  }
  auto replica = QueryInt(req, "replica", 0, 0, 4095);
  auto task = QueryInt(req, "task", 0, 0, 1023);
  auto offset = QueryInt(req, "offset", 0, 0, INT64_MAX);
  auto max = QueryInt(req, "max", 1 << 16, 1, 1 << 22);
  auto step = QueryInt(req, "step", -1, -1, INT32_MAX);  // -1: the job's own processes
  for (const auto* r : {&replica, &task, &offset, &max, &step}) {
    if (!r->ok()) return r->status();
  }
  out.locate.query = {static_cast<int32_t>(*replica), static_cast<int32_t>(*task),
                      static_cast<int32_t>(*step)};
  out.offset = *offset;
  out.max = *max;
  return out;
}

Result<head::CancelJob> DecodeCancelJob(const HttpRequest& req, const PathArgs& args) {
  auto id = PathJobId(args.at(0));
  if (!id.ok()) return id.status();
  bool element_only = req.query.count("element") && req.query.at("element") != "0";
  return head::CancelJob{*id, element_only};
}

Result<head::SignalJob> DecodeSignalJob(const HttpRequest& req, const PathArgs& args) {
  auto id = PathJobId(args.at(0));
  if (!id.ok()) return id.status();
  auto sig = QueryInt(req, "signal", 0, 1, 64);
  if (!sig.ok()) return sig.status();
  if (*sig == 0) return InvalidArgument("query 'signal': want a signal number");
  std::string to = req.query.count("to") ? req.query.at("to") : "";
  if (!to.empty() && to != "batch" && to != "all") {
    return InvalidArgument("query 'to': got \"" + to + "\", want batch or all");
  }
  auto target = to == "batch" ? head::HeadCore::SignalTarget::kBatch
                : to == "all" ? head::HeadCore::SignalTarget::kAll
                              : head::HeadCore::SignalTarget::kDefault;
  return head::SignalJob{*id, static_cast<int32_t>(*sig), target};
}

Result<head::RequeueJob> DecodeRequeueJob(const HttpRequest&, const PathArgs& args) {
  auto id = PathJobId(args.at(0));
  if (!id.ok()) return id.status();
  return head::RequeueJob{*id};
}

Result<head::HoldJob> DecodeHoldJob(const HttpRequest&, const PathArgs& args) {
  auto id = PathJobId(args.at(0));
  if (!id.ok()) return id.status();
  return head::HoldJob{*id, true};
}

Result<head::HoldJob> DecodeReleaseJob(const HttpRequest&, const PathArgs& args) {
  auto id = PathJobId(args.at(0));
  if (!id.ok()) return id.status();
  return head::HoldJob{*id, false};
}

// POST /v1/jobs/{id}/update {"time_limit_ms": N, "priority": P, "queue": "Q"}: any of them.
Result<head::UpdateJob> DecodeUpdateJob(const HttpRequest& req, const PathArgs& args) {
  auto id = PathJobId(args.at(0));
  if (!id.ok()) return id.status();
  auto body = BodyObject(req, " with time_limit_ms, priority or queue");
  if (!body.ok()) return body.status();
  head::UpdateJob u{*id, {}};
  for (const auto& [key, value] : body->items()) {
    if (key == "time_limit_ms" && value.is_number_integer()) {
      u.update.time_limit_ms = value.get<int64_t>();
    } else if (key == "priority" && value.is_number_integer() &&
               value.get<int64_t>() >= std::numeric_limits<int32_t>::min() &&
               value.get<int64_t>() <= std::numeric_limits<int32_t>::max()) {
      u.update.priority = static_cast<int32_t>(value.get<int64_t>());
    } else if (key == "queue" && value.is_string()) {
      u.update.queue = value.get<std::string>();
    } else if (key == "time_limit_ms" || key == "priority" || key == "queue") {
      return InvalidArgument("field '" + key + "': got " + value.dump() + ", want " +
                             (key == "queue" ? "a queue's name" : "a whole number"));
    } else {
      return InvalidArgument("field '" + key + "': unknown; known: time_limit_ms, priority, queue");
    }
  }
  if (!u.update.time_limit_ms && !u.update.priority && !u.update.queue) {
    return InvalidArgument("body: want at least one of time_limit_ms, priority, queue");
  }
  return u;
}

Result<head::ReportCheckpoint> DecodeReportCheckpoint(const HttpRequest&, const PathArgs& args) {
  auto id = PathJobId(args.at(0));
  if (!id.ok()) return id.status();
  return head::ReportCheckpoint{*id};
}

Result<head::OpenExec> DecodeOpenExec(const HttpRequest& req, const PathArgs& args) {
  auto id = PathJobId(args.at(0));
  if (!id.ok()) return id.status();
  auto body = BodyObject(req, "");
  if (!body.ok()) return body.status();
  head::OpenExec c{*id, 0};
  if (auto r = body->find("replica"); r != body->end()) {
    if (!r->is_number_integer() || r->get<int64_t>() < 0 || r->get<int64_t>() > 4095) {
      return InvalidArgument("field 'replica': got " + r->dump() + ", want 0..4095");
    }
    c.replica = r->get<int32_t>();
  }
  auto cmd = body->find("command");
  if (cmd == body->end() || !cmd->is_array() || cmd->empty() ||
      !std::all_of(cmd->begin(), cmd->end(), [](const Json& a) { return a.is_string(); })) {
    return InvalidArgument("field 'command': want a non-empty array of strings");
  }
  return c;
}

Result<head::TouchSession> DecodeTouchSession(const HttpRequest& req, const PathArgs& args) {
  auto id = PathJobId(args.at(0));
  if (!id.ok()) return id.status();
  auto typed = QueryInt(req, "typed", 0, 0, 1);
  if (!typed.ok()) return typed.status();
  return head::TouchSession{*id, *typed == 1};
}

Result<head::StartStep> DecodeStartStep(const HttpRequest& req, const PathArgs& args) {
  auto id = PathJobId(args.at(0));
  if (!id.ok()) return id.status();
  auto parsed = StepRequestFromJson(req.body);
  if (!parsed.ok()) return parsed.status();
  return head::StartStep{*id, std::move(*parsed)};
}

Result<head::GetStep> DecodeGetStep(const HttpRequest&, const PathArgs& args) {
  auto id = PathJobId(args.at(0));
  if (!id.ok()) return id.status();
  uint64_t step = 0;
  if (!ParseU64(args.at(1), &step) || step > INT32_MAX) {
    return InvalidArgument("step id: got \"" + args.at(1) + "\", want a number");
  }
  return head::GetStep{*id, static_cast<int32_t>(step)};
}

// GET /v1/usage?by=user|queue&since=SECONDS (default 7 days).
Result<head::GetUsage> DecodeGetUsage(const HttpRequest& req, const PathArgs&) {
  auto it = req.query.find("by");
  auto by = ParseUsageBy("query 'by'", it == req.query.end() ? "user" : it->second);
  if (!by.ok()) return by.status();
  constexpr int64_t kWeek = 7 * 86400;
  auto since = QueryInt(req, "since", kWeek, 1, int64_t{100} * 365 * 86400);
  if (!since.ok()) return since.status();
  return head::GetUsage{*by, *since * kSecond};
}

// GET /v1/history?since=SECONDS (default 7 days): what `corral whatif` replays.
Result<head::GetHistory> DecodeGetHistory(const HttpRequest& req, const PathArgs&) {
  constexpr int64_t kWeek = 7 * 86400;
  auto since = QueryInt(req, "since", kWeek, 1, int64_t{100} * 365 * 86400);
  if (!since.ok()) return since.status();
  return head::GetHistory{*since * kSecond};
}

// GET /v1/cluster/series?since=SECONDS (default 0: every point the head keeps).
Result<head::GetClusterSeries> DecodeGetClusterSeries(const HttpRequest& req, const PathArgs&) {
  auto since = QueryInt(req, "since", 0, 0, int64_t{100} * 365 * 86400);
  if (!since.ok()) return since.status();
  return head::GetClusterSeries{*since * kSecond};
}

// --- cluster ---

Result<head::RemoveNode> DecodeRemoveNode(const HttpRequest&, const PathArgs& args) {
  return head::RemoveNode{args.at(0)};
}

Result<head::GetNode> DecodeGetNode(const HttpRequest&, const PathArgs& args) {
  return head::GetNode{args.at(0)};
}

// The optional body of a drain: {"reason": "..."}; no body, no reason.
Result<std::string> OptionalReason(const HttpRequest& req) {
  if (req.body.empty()) return std::string();
  auto body = BodyObject(req, " with an optional reason");
  if (!body.ok()) return body.status();
  auto r = body->find("reason");
  if (r == body->end()) return std::string();
  if (!r->is_string()) return InvalidArgument("field 'reason': want a string");
  return r->get<std::string>();
}

// POST /v1/nodes/{name}/drain, body optional: {"reason": "..."}.
Result<head::SetDrain> DecodeDrain(const HttpRequest& req, const PathArgs& args) {
  head::SetDrain c{args.at(0), true, ""};
  auto reason = OptionalReason(req);
  if (!reason.ok()) return reason.status();
  c.reason = std::move(*reason);
  return c;
}

Result<head::SetDrain> DecodeUndrain(const HttpRequest&, const PathArgs& args) {
  return head::SetDrain{args.at(0), false, ""};
}

// POST /v1/nodes/{name}/gpus/{gpu}/drain|undrain, body optional: {"reason": "..."}.
Result<head::SetGpuDrain> DecodeGpuDrain(const HttpRequest& req, const PathArgs& args, bool drain) {
  head::SetGpuDrain c{args.at(0), 0, drain, ""};
  const std::string& gpu = args.at(1);
  int64_t index = -1;
  auto [end, ec] = std::from_chars(gpu.data(), gpu.data() + gpu.size(), index);
  if (ec != std::errc() || end != gpu.data() + gpu.size() || index < 0 || index > 1024) {
    return InvalidArgument("field 'gpu': got \"" + gpu + "\", want a GPU index 0-1024");
  }
  c.gpu = static_cast<int32_t>(index);
  auto reason = OptionalReason(req);
  if (!reason.ok()) return reason.status();
  c.reason = std::move(*reason);
  return c;
}

Result<head::SetGpuDrain> DecodeGpuDrainOn(const HttpRequest& req, const PathArgs& args) {
  return DecodeGpuDrain(req, args, true);
}

Result<head::SetGpuDrain> DecodeGpuDrainOff(const HttpRequest& req, const PathArgs& args) {
  return DecodeGpuDrain(req, args, false);
}

// PUT /v1/queues/{name}: the whole queue; fields left out take their defaults.
Result<head::SetQueue> DecodeSetQueue(const HttpRequest& req, const PathArgs& args) {
  auto body = BodyObject(req, "");
  if (!body.ok()) return body.status();
  QueueConfig q{args.at(0), 0, -1, 1.0};
  for (auto it = body->begin(); it != body->end(); ++it) {
    const std::string& k = it.key();
    if (k == "max_pending_per_user") {
      if (!it->is_number_integer() || it->get<int64_t>() < 0 || it->get<int64_t>() > 10000000) {
        return InvalidArgument("field 'max_pending_per_user': got " + it->dump() +
                               ", want an integer >= 0");
      }
      q.max_pending_per_user = it->get<int32_t>();
    } else if (k == "max_interactive_gpus_per_user") {
      if (!it->is_number_integer() || it->get<int64_t>() < 0 || it->get<int64_t>() > 10000000) {
        return InvalidArgument("field 'max_interactive_gpus_per_user': got " + it->dump() +
                               ", want a whole number of GPUs >= 0 (0: no limit)");
      }
      q.max_interactive_gpus_per_user = it->get<int32_t>();
    } else if (k == "max_grace_ms") {
      if (!it->is_number_integer() || it->get<int64_t>() < 0 || it->get<int64_t>() > 7 * kDay) {
        return InvalidArgument("field 'max_grace_ms': got " + it->dump() +
                               ", want 0 (no limit) to a week in milliseconds");
      }
      q.max_grace_ms = it->get<DurationMs>();
    } else if (k == "quota_gpus" || k == "limit_gpus") {
      int64_t lo = k == "limit_gpus" ? -1 : 0;
      if (!it->is_number_integer() || it->get<int64_t>() < lo || it->get<int64_t>() > 10000000) {
        return InvalidArgument("field '" + k + "': got " + it->dump() +
                               ", want an integer >= " + std::to_string(lo));
      }
      (k == "quota_gpus" ? q.quota_gpus : q.limit_gpus) = it->get<int32_t>();
    } else if (k == "weight") {
      if (!it->is_number() || !(it->get<double>() > 0) || it->get<double>() > 1e6) {
        return InvalidArgument("field 'weight': got " + it->dump() + ", want a number > 0");
      }
      q.weight = it->get<double>();
    } else if (k == "gpu_sharing") {
      if (!it->is_boolean()) {
        return InvalidArgument("field 'gpu_sharing': got " + it->dump() + ", want true or false");
      }
      q.gpu_sharing = it->get<bool>();
    } else if (k == "idle_timeout_ms") {
      if (!it->is_number_integer() || it->get<int64_t>() < 0 || it->get<int64_t>() > 365 * kDay) {
        return InvalidArgument("field 'idle_timeout_ms': got " + it->dump() +
                               ", want milliseconds >= 0 (0: sessions are never idle-culled)");
      }
      q.idle_timeout_ms = it->get<int64_t>();
    } else if (k == "max_wait_ms") {
      if (!it->is_number_integer() || it->get<int64_t>() < 0 || it->get<int64_t>() > 365 * kDay) {
        return InvalidArgument("field 'max_wait_ms': got " + it->dump() +
                               ", want milliseconds from 0 to a year (0: the parent queue's or "
                               "the scheduler's default)");
      }
      q.max_wait_ms = it->get<int64_t>();
    } else if (k == "allowed_users" || k == "allowed_groups") {
      std::vector<std::string>& names = k == "allowed_users" ? q.allowed_users : q.allowed_groups;
      for (const Json& n : it->is_array() ? *it : Json::array({nullptr})) {
        if (!n.is_string() || n.get<std::string>().empty()) {
          return InvalidArgument("field '" + k + "': got " + it->dump() +
                                 ", want an array of names");
        }
        names.push_back(n.get<std::string>());
      }
    } else {
      return InvalidArgument(
          "unknown field '" + k +
          "'; want quota_gpus, limit_gpus, weight, max_pending_per_user, max_grace_ms, "
          "allowed_users, allowed_groups, gpu_sharing, idle_timeout_ms, max_wait_ms, "
          "max_interactive_gpus_per_user");
    }
  }
  return head::SetQueue{std::move(q)};
}

Result<head::SetQos> DecodeSetQos(const HttpRequest& req, const PathArgs& args) {
  auto body = BodyObject(req, "");
  if (!body.ok()) return body.status();
  auto q = ParseQosClass(args.at(0), *body);
  if (!q.ok()) return q.status();
  return head::SetQos{std::move(*q)};
}

Result<head::DeleteQos> DecodeDeleteQos(const HttpRequest&, const PathArgs& args) {
  return head::DeleteQos{args.at(0)};
}

Result<head::CreateReservation> DecodeCreateReservation(const HttpRequest& req, const PathArgs&) {
  auto body = BodyObject(req, "");
  if (!body.ok()) return body.status();
  auto r = ParseNodeReservation(*body);
  if (!r.ok()) return r.status();
  return head::CreateReservation{std::move(*r)};
}

Result<head::DeleteReservation> DecodeDeleteReservation(const HttpRequest&, const PathArgs& args) {
  return head::DeleteReservation{args.at(0)};
}

Result<head::AddDataset> DecodeAddDataset(const HttpRequest& req, const PathArgs&) {
  auto body = BodyObject(req, "");
  if (!body.ok()) return body.status();
  auto d = ParseDataset(*body);
  if (!d.ok()) return d.status();
  return head::AddDataset{std::move(*d)};
}

Result<head::SetSourceLimit> DecodeSetSourceLimit(const HttpRequest& req, const PathArgs&) {
  auto body = BodyObject(req, "");
  if (!body.ok()) return body.status();
  head::SetSourceLimit c;
  auto source = body->find("source");
  if (source == body->end() || !source->is_string()) {
    return InvalidArgument("field 'source': want the source's directory or URL, as a string");
  }
  c.source = source->get<std::string>();
  if (auto rate = body->find("rate"); rate != body->end()) {
    if (!rate->is_number_integer()) {
      return InvalidArgument("field 'rate': got " + rate->dump() + ", want bytes per second");
    }
    c.rate = rate->get<int64_t>();
  }
  if (auto fetches = body->find("fetches"); fetches != body->end()) {
    if (!fetches->is_number_integer() || fetches->get<int64_t>() > INT32_MAX ||
        fetches->get<int64_t>() < INT32_MIN) {
      return InvalidArgument("field 'fetches': got " + fetches->dump() +
                             ", want how many nodes may fetch at once");
    }
    c.fetches = fetches->get<int32_t>();
  }
  return c;
}

Result<head::GetDataset> DecodeGetDataset(const HttpRequest&, const PathArgs& args) {
  return head::GetDataset{args.at(0)};
}

Result<head::RemoveDataset> DecodeRemoveDataset(const HttpRequest&, const PathArgs& args) {
  return head::RemoveDataset{args.at(0)};
}

// --- credentials ---

Result<head::CreateToken> DecodeCreateToken(const HttpRequest& req, const PathArgs&) {
  auto body = BodyObject(req, " {\"user\": ...}");
  if (!body.ok()) return body.status();
  head::TokenRequest t;
  for (auto it = body->begin(); it != body->end(); ++it) {
    const std::string& k = it.key();
    if (k == "user" && it->is_string()) {
      t.user = it->get<std::string>();
    } else if (k == "role" && it->is_string()) {
      if (!ParseRole(it->get<std::string>(), &t.role)) {
        return InvalidArgument("field 'role': got " + it->dump() +
                               ", want user, queue-admin or admin");
      }
    } else if ((k == "queues" || k == "groups") && it->is_array()) {
      for (const Json& q : *it) {
        if (!q.is_string() || q.get<std::string>().empty()) {
          return InvalidArgument("field '" + k + "': want " + (k == "queues" ? "queue" : "group") +
                                 " names");
        }
        (k == "queues" ? t.queues : t.groups).push_back(q.get<std::string>());
      }
    } else if (k == "expires" && it->is_string()) {
      auto d = ParseDuration("expires", it->get<std::string>());
      if (!d.ok()) return d.status();
      t.expires_after_ms = *d;
    } else {
      return InvalidArgument("field '" + k +
                             "': unknown or of the wrong type; want user, role, queues, groups, "
                             "expires");
    }
  }
  if (t.user.empty() || t.user.front() == '@') {
    return InvalidArgument("field 'user': want a user name");
  }
  return head::CreateToken{std::move(t)};
}

Result<head::RevokeToken> DecodeRevokeToken(const HttpRequest&, const PathArgs& args) {
  return head::RevokeToken{args.at(0)};
}

// --- the head itself ---

// POST /v1/admin/backup {"path": "/abs/file"}: a copy of the store on the head's host.
Result<head::BackupStore> DecodeBackupStore(const HttpRequest& req, const PathArgs&) {
  auto body = BodyObject(req, " {\"path\": ...}");
  if (!body.ok()) return body.status();
  std::string path;
  for (auto it = body->begin(); it != body->end(); ++it) {
    if (it.key() == "path" && it->is_string()) {
      path = it->get<std::string>();
    } else {
      return InvalidArgument("field '" + it.key() +
                             "': unknown or of the wrong type; want path (a string)");
    }
  }
  if (path.empty() || path.front() != '/') {
    return InvalidArgument("field 'path': got '" + path +
                           "', want an absolute path on the head's host");
  }
  return head::BackupStore{std::move(path)};
}

bool WantsEventStream(const HttpRequest& req) {
  return req.Header("accept").find("text/event-stream") != std::string::npos ||
         (req.query.count("format") && req.query.at("format") == "sse");
}

// GET /v1/events?since=REV[&max=N][&wait=MS]; without `since`, the Last-Event-ID header (an
// EventSource coming back).
Result<head::WatchEvents> DecodeWatchEvents(const HttpRequest& req, const PathArgs&) {
  auto since = QueryInt(req, "since", -1, 0, INT64_MAX);
  auto max = QueryInt(req, "max", 1000, 1, 10000);
  auto wait = QueryInt(req, "wait", WantsEventStream(req) ? 25000 : 0, 0, 60000);
  for (const auto* r : {&since, &max, &wait}) {
    if (!r->ok()) return r->status();
  }
  int64_t from = *since;
  if (from < 0) {
    uint64_t last = 0;
    std::string id = req.Header("last-event-id");
    if (!id.empty() && !ParseU64(id, &last)) {
      return InvalidArgument("header 'Last-Event-ID': got \"" + id + "\", want a revision");
    }
    from = static_cast<int64_t>(last);
  }
  return head::WatchEvents{static_cast<uint64_t>(from), static_cast<int32_t>(*max), *wait};
}

// --- agents ---

Result<head::RegisterAgent> DecodeRegisterAgent(const HttpRequest& req, const PathArgs&) {
  Json body = Json::parse(req.body, nullptr, false);
  if (body.is_discarded()) return InvalidArgument("body: not JSON");
  auto r = RegisterRequestFromJson(body);
  if (!r.ok()) return r.status();
  return head::RegisterAgent{std::move(*r)};
}

Result<head::SyncAgent> DecodeSyncAgent(const HttpRequest& req, const PathArgs&) {
  Json body = Json::parse(req.body, nullptr, false);
  if (body.is_discarded()) return InvalidArgument("body: not JSON");
  auto r = SyncRequestFromJson(body);
  if (!r.ok()) return r.status();
  return head::SyncAgent{std::move(*r)};
}

// --- answers ---

Json JobAnswer(const Job& job) { return Json{{"job", ToJson(job)}}; }

Json SessionAnswer(const head::SessionStatus& s) {
  return Json{{"job", ToJson(s.job)},
              {"idle_stop_at", s.idle_stop_at > 0 ? Json(s.idle_stop_at) : Json()},
              {"inactive_limit_ms", s.inactive_limit_ms}};
}

Json JobsPageAnswer(const head::ListJobs& command, const std::vector<Job>& jobs) {
  Json arr = Json::array();
  for (const Job& j : jobs) arr.push_back(ToJson(j));
  // A full page may have a next one.
  Json next = static_cast<int32_t>(jobs.size()) == command.filter.limit && !jobs.empty()
                  ? Json(jobs.back().id)
                  : Json();
  return Json{{"jobs", arr}, {"next_after", next}};
}

Json StepAnswer(const Step& step) { return Json{{"step", ToJson(step)}}; }

Json UsageAnswer(const UsageReport& report) { return ToJson(report); }

Json HistoryAnswer(const head::History& history) { return head::ToJson(history); }

Json ClusterSeriesAnswer(const head::ClusterSeriesView& series) { return head::ToJson(series); }

Json NodesAnswer(const std::vector<NodeView>& nodes) {
  Json arr = Json::array();
  for (const auto& v : nodes) arr.push_back(ToJson(v));
  return Json{{"nodes", arr}};
}

Json NodeAnswer(const NodeView& node) { return Json{{"node", ToJson(node)}}; }

Json NodeRecordAnswer(const Node& node) { return Json{{"node", ToJson(node)}}; }

Json QueuesAnswer(const std::vector<QueueView>& queues) {
  Json arr = Json::array();
  for (const auto& q : queues) arr.push_back(ToJson(q));
  return Json{{"queues", arr}};
}

Json QueueAnswer(const QueueConfig& queue) { return Json{{"queue", ToJson(queue)}}; }

Json QosListAnswer(const std::vector<QosClass>& classes) {
  Json arr = Json::array();
  for (const QosClass& q : classes) arr.push_back(ToJson(q));
  return Json{{"qos", arr}};
}

Json QosAnswer(const QosClass& qos) { return Json{{"qos", ToJson(qos)}}; }

Json ReservationListAnswer(const std::vector<NodeReservationSpec>& all) {
  Json arr = Json::array();
  for (const NodeReservationSpec& r : all) arr.push_back(ToJson(r));
  return Json{{"reservations", arr}};
}

Json ReservationAnswer(const NodeReservationSpec& r) { return Json{{"reservation", ToJson(r)}}; }

Json DatasetListAnswer(const head::DatasetListing& all) {
  Json arr = Json::array();
  for (const DatasetView& d : all.datasets) arr.push_back(ToJson(d));
  Json sources = Json::array();
  for (const DatasetSourceRate& r : all.sources) sources.push_back(ToJson(r));
  return Json{{"datasets", arr}, {"sources", sources}};
}

Json DatasetAnswer(const DatasetView& d) { return Json{{"dataset", ToJson(d)}}; }

Json SourceBudgetAnswer(const SourceBudget& b) { return Json{{"limit", ToJson(b)}}; }

Json SourceBudgetListAnswer(const std::vector<SourceBudget>& all) {
  Json arr = Json::array();
  for (const SourceBudget& b : all) arr.push_back(ToJson(b));
  return Json{{"limits", arr}};
}

Json TokensAnswer(const std::vector<head::Credential>& tokens) {
  Json arr = Json::array();
  for (const auto& c : tokens) arr.push_back(CredentialJson(c));
  return Json{{"tokens", arr}};
}

Json NewTokenAnswer(const head::NewToken& token) {
  return Json{{"token", token.secret}, {"credential", CredentialJson(token.credential)}};
}

Json RevokedAnswer(const head::Credential& token) {
  return Json{{"revoked", CredentialJson(token)}};
}

Json BackupAnswer(const store::BackupInfo& b) {
  return Json{{"path", b.path}, {"bytes", b.bytes}, {"revision", b.revision}, {"jobs", b.jobs}};
}

Json RegisterAnswer(const RegisterResponse& r) { return ToJson(r); }

Json SyncAnswer(const SyncResponse& r) { return ToJson(r); }

}  // namespace corral::api
