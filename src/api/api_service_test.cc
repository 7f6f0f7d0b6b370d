// The API over a real head (in-memory store, virtual clock): every route of the table is
// reached, decodes its command, and answers as docs/api.md says; bad input names its field.
#include "api/api_service.h"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <thread>

#include "api/test_head.h"

namespace corral::api {
namespace {

using corral::testing::CountingRandom;
using corral::testing::FakeClock;
using test::kAdmin;
using test::kJoin;

class Api : public ::testing::Test {
 protected:
  void SetUp() override {
    auto h = test::StartTestHead(&clock_, &random_);
    ASSERT_TRUE(h.ok()) << h.status().ToString();
    head_ = std::move(*h);
    api_ = std::make_unique<ApiService>(head_.get());
  }
  void TearDown() override { head_->Stop(); }

  struct Reply {
    int status = 0;
    Json body;
  };
  Reply Call(const std::string& method, const std::string& target, const Json& body = nullptr,
             const std::string& bearer = kAdmin) {
    net::HttpRequest req;
    req.method = method;
    req.target = target;
    size_t q = target.find('?');
    req.path = target.substr(0, q);
    if (q != std::string::npos) {
      std::string query = target.substr(q + 1);
      size_t i = 0;
      while (i < query.size()) {
        size_t amp = query.find('&', i);
        if (amp == std::string::npos) amp = query.size();
        std::string kv = query.substr(i, amp - i);
        size_t eq = kv.find('=');
        req.query[kv.substr(0, eq)] = eq == std::string::npos ? "" : kv.substr(eq + 1);
        i = amp + 1;
      }
    }
    if (!body.is_null()) req.body = body.dump();
    if (!bearer.empty()) req.headers["authorization"] = "Bearer " + bearer;
    req.remote = "127.0.0.1:5555";
    std::promise<net::HttpResponse> p;
    api_->Handle(req, [&p](net::HttpResponse r) { p.set_value(std::move(r)); });
    net::HttpResponse r = p.get_future().get();
    if (r.render) r.body = r.render();
    return {r.status, Json::parse(r.body, nullptr, false)};
  }
  static std::string ErrorOf(const Reply& r) {
    return r.body.is_object() && r.body.contains("error") ? r.body["error"].value("message", "")
                                                          : "";
  }
  Json OneGpuJob() { return Json{{"spec", {{"command", {"true"}}, {"gpus", 1}}}}; }
  void RegisterNode(const std::string& name) {
    Json req{{"name", name},
             {"address", name + ":7071"},
             {"cpu_milli", 8000},
             {"memory_mb", 16000},
             {"gpus", {{{"index", 0}, {"uuid", name + "-0"}, {"model", "Sim"}}}}};
    // An agent that sends no protocol version predates the exchange: refused, naming both.
    Reply old = Call("POST", "/v1/agent/register", req, kJoin);
    ASSERT_EQ(old.status, 409);
    EXPECT_NE(ErrorOf(old).find("protocol version 1, too old for this head (version " +
                                std::to_string(kAgentProtocol)),
              std::string::npos)
        << ErrorOf(old);
    req["protocol"] = kAgentProtocol;
    ASSERT_EQ(Call("POST", "/v1/agent/register", req, kJoin).status, 200);
  }

  FakeClock clock_;
  CountingRandom random_;
  std::unique_ptr<head::Head> head_;
  std::unique_ptr<ApiService> api_;
};

TEST_F(Api, EveryJobRouteRunsItsCommand) {
  RegisterNode("n1");
  Reply submitted = Call("POST", "/v1/jobs", OneGpuJob());
  ASSERT_EQ(submitted.status, 201) << submitted.body.dump();
  JobId id = submitted.body["job"]["id"].get<JobId>();
  std::string job = "/v1/jobs/" + std::to_string(id);
  EXPECT_EQ(Call("GET", job).body["job"]["id"], id);
  Reply page = Call("GET", "/v1/jobs?limit=1");
  ASSERT_EQ(page.status, 200);
  EXPECT_EQ(page.body["jobs"].size(), 1u);
  EXPECT_EQ(page.body["next_after"], id) << "a full page may have a next one";
  EXPECT_TRUE(Call("GET", "/v1/jobs?limit=2").body["next_after"].is_null());
  // Placed, not yet running: the core refuses a signal, which shows the command reached it.
  EXPECT_EQ(Call("POST", job + "/signal?signal=10").status, 409);
  EXPECT_EQ(Call("POST", job + "/checkpoint").status, 200);
  EXPECT_EQ(Call("POST", job + "/requeue").status, 200);
  Reply cancelled = Call("POST", job + "/cancel");
  ASSERT_EQ(cancelled.status, 200);
  EXPECT_EQ(cancelled.body["job"]["runs"][0]["stop_requested"], true) << cancelled.body.dump();
  Reply held = Call("POST", "/v1/jobs", OneGpuJob());
  std::string other = "/v1/jobs/" + std::to_string(held.body["job"]["id"].get<JobId>());
  Reply hold = Call("POST", other + "/hold");
  ASSERT_EQ(hold.status, 200) << hold.body.dump();
  EXPECT_EQ(Call("GET", other).body["job"]["held"], true);
  EXPECT_EQ(Call("POST", other + "/release").body["job"]["held"], false);
  Reply updated = Call("POST", other + "/update", Json{{"priority", 3}, {"time_limit_ms", 60000}});
  ASSERT_EQ(updated.status, 200) << updated.body.dump();
  EXPECT_EQ(updated.body["job"]["spec"]["priority"], 3) << updated.body.dump();
  EXPECT_EQ(Call("GET", "/v1/usage?by=queue").status, 200);
  Reply history = Call("GET", "/v1/history?since=3600");
  ASSERT_EQ(history.status, 200) << history.body.dump();
  EXPECT_EQ(history.body["jobs"].size(), 2u) << history.body.dump();
  EXPECT_EQ(history.body["scheduler"]["policy"], "corral");
  // Only a job's own batch step starts steps: the command is decoded, then refused.
  EXPECT_EQ(Call("POST", job + "/steps", Json{{"command", {"true"}}}).status, 403);
  EXPECT_EQ(Call("GET", job + "/steps/0").status, 404);
}

TEST_F(Api, ClusterQueueAndTokenRoutesRunTheirCommands) {
  RegisterNode("n1");
  Reply capped =
      Call("PUT", "/v1/queues/dev", Json{{"max_interactive_gpus_per_user", 2}, {"weight", 1}});
  ASSERT_EQ(capped.status, 200) << capped.body.dump();
  EXPECT_EQ(capped.body["queue"]["max_interactive_gpus_per_user"], 2) << capped.body.dump();
  Reply nodes = Call("GET", "/v1/nodes");
  ASSERT_EQ(nodes.body["nodes"].size(), 1u);
  EXPECT_EQ(Call("GET", "/v1/nodes/n1").body["node"]["name"], "n1");
  EXPECT_EQ(Call("GET", "/v1/nodes/n9").status, 404);
  Reply drained = Call("POST", "/v1/nodes/n1/drain");
  EXPECT_EQ(drained.body["node"]["drain"], "drained");
  EXPECT_EQ(Call("POST", "/v1/nodes/n1/undrain").body["node"]["state"], "ready");
  // A queue's name is the rest of the path, slashes and all.
  Reply queue =
      Call("PUT", "/v1/queues/org/team", Json{{"quota_gpus", 2}, {"max_wait_ms", 6 * kHour}});
  ASSERT_EQ(queue.status, 200) << queue.body.dump();
  EXPECT_EQ(queue.body["queue"]["name"], "org/team");
  EXPECT_EQ(queue.body["queue"]["max_wait_ms"], 6 * kHour);
  bool listed = false;
  Reply queues = Call("GET", "/v1/queues");
  for (const Json& q : queues.body["queues"]) listed |= q["name"] == "org/team";
  EXPECT_TRUE(listed) << queues.body.dump();
  Reply token = Call("POST", "/v1/tokens", Json{{"user", "ana"}});
  ASSERT_EQ(token.status, 201) << token.body.dump();
  EXPECT_FALSE(token.body["credential"].contains("hash")) << "never a credential's hash";
  std::string secret = token.body["token"];
  EXPECT_EQ(Call("GET", "/v1/jobs", nullptr, secret).status, 200);
  EXPECT_EQ(Call("GET", "/v1/tokens").body["tokens"].size(), 4u);  // admin, join, n1, ana
  std::string cid = token.body["credential"]["id"];
  EXPECT_EQ(Call("DELETE", "/v1/tokens/" + cid).body["revoked"]["id"], cid);
  EXPECT_EQ(Call("GET", "/v1/jobs", nullptr, secret).status, 401);
  Reply events = Call("GET", "/v1/events?since=0&max=5");
  ASSERT_EQ(events.status, 200);
  EXPECT_EQ(events.body["events"].size(), 5u);
}

// The head samples the cluster on its tick, one point a step (a minute here); the route
// answers the points, the recent ones with `since`.
TEST_F(Api, TheClusterSeriesAnswersThePointsTheHeadSampledOneAStep) {
  // The first point falls at the start (1,000,000 ms, in the minute from 960,000), at the
  // shell's first tick: waited for, so that the clock moves only after it. The node registers
  // a second before the next minute, so that it is still heard from at its point.
  for (int i = 0; i < 100; ++i) {
    if (Call("GET", "/v1/cluster/series").body["points"].size() >= 1) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  clock_.Advance(19 * kSecond);
  RegisterNode("n1");
  ASSERT_EQ(Call("POST", "/v1/jobs", OneGpuJob()).status, 201);
  ASSERT_EQ(Call("POST", "/v1/jobs", OneGpuJob()).status, 201);
  ASSERT_EQ(Call("GET", "/v1/cluster/series").body["points"].size(), 1u) << "the same minute";
  clock_.Advance(kSecond);
  Reply series;
  for (int i = 0; i < 100; ++i) {  // the tick runs every 500 ms of real time
    series = Call("GET", "/v1/cluster/series");
    if (series.body["points"].size() >= 2) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_EQ(series.status, 200) << series.body.dump();
  EXPECT_EQ(series.body["step_ms"], kMinute);
  const Json& points = series.body["points"];
  ASSERT_EQ(points.size(), 2u) << "one point a step however often the tick runs: "
                               << series.body.dump();
  EXPECT_EQ(points[0][1], 0) << "the first point, at the start, saw no node";
  // n1's GPU held by one job, the other pending; no GPU measured.
  EXPECT_EQ(points[1], Json::array({clock_.Now(), 1, 1, nullptr, 1, 1})) << series.body.dump();
  Reply recent = Call("GET", "/v1/cluster/series?since=10");
  ASSERT_EQ(recent.status, 200);
  EXPECT_EQ(recent.body["points"].size(), 1u) << recent.body.dump();
  Reply bad = Call("GET", "/v1/cluster/series?since=-5");
  EXPECT_EQ(bad.status, 400);
  EXPECT_NE(ErrorOf(bad).find("since"), std::string::npos) << ErrorOf(bad);
}

TEST_F(Api, BadInputNamesItsFieldAndChangesNothing) {
  auto expect_400 = [&](Reply r, const std::string& names) {
    EXPECT_EQ(r.status, 400) << r.body.dump();
    EXPECT_NE(ErrorOf(r).find(names), std::string::npos) << ErrorOf(r);
  };
  expect_400(Call("GET", "/v1/jobs/x1"), "job id");
  expect_400(Call("GET", "/v1/jobs?state=runing"), "query 'state'");
  expect_400(Call("GET", "/v1/jobs?limit=0"), "query 'limit'");
  expect_400(Call("POST", "/v1/jobs/1/signal?signal=99"), "query 'signal'");
  expect_400(Call("POST", "/v1/jobs/1/signal?signal=9&to=nobody"), "query 'to'");
  expect_400(Call("GET", "/v1/jobs/1/steps/x"), "step id");
  expect_400(Call("POST", "/v1/jobs", Json{{"spec", {{"command", {"true"}}}}, {"owner", "x"}}),
             "unknown field 'owner'");
  expect_400(Call("PUT", "/v1/queues/q", Json{{"weight", 0}}), "field 'weight'");
  expect_400(Call("PUT", "/v1/queues/q", Json{{"quota", 1}}), "unknown field 'quota'");
  expect_400(Call("PUT", "/v1/queues/q", Json{{"max_grace_ms", "1m"}}), "field 'max_grace_ms'");
  expect_400(Call("PUT", "/v1/queues/q", Json{{"max_wait_ms", -1}}), "field 'max_wait_ms'");
  expect_400(Call("PUT", "/v1/queues/q", Json{{"max_wait_ms", "6h"}}), "field 'max_wait_ms'");
  expect_400(Call("PUT", "/v1/queues/q", Json{{"max_interactive_gpus_per_user", -1}}),
             "field 'max_interactive_gpus_per_user': got -1, want a whole number of GPUs >= 0");
  expect_400(Call("PUT", "/v1/queues/q", Json{{"max_interactive_gpus_per_user", 1.5}}),
             "field 'max_interactive_gpus_per_user'");
  expect_400(Call("POST", "/v1/tokens", Json{{"user", "ana"}, {"role", "root"}}), "field 'role'");
  expect_400(Call("POST", "/v1/admin/backup", Json{{"path", "relative"}}), "field 'path'");
  expect_400(Call("GET", "/v1/usage?by=team"), "query 'by'");
  expect_400(Call("POST", "/v1/jobs/1/update", Json{{"nice", 1}}), "field 'nice': unknown");
  expect_400(Call("POST", "/v1/jobs/1/update", Json{{"priority", "high"}}), "field 'priority'");
  expect_400(Call("POST", "/v1/jobs/1/update", Json::object()), "want at least one of");
  expect_400(Call("GET", "/v1/history?since=0"), "query 'since'");
  expect_400(Call("GET", "/v1/events?max=0"), "query 'max'");
  EXPECT_EQ(Call("GET", "/v1/jobs").body["jobs"].size(), 0u) << "nothing was submitted";
  EXPECT_EQ(Call("GET", "/v1/queues").body["queues"].size(), 1u) << "only the default queue";
}

// Hierarchical quotas: a sub-queue's quota above its parent's is a 400 naming the field and
// the parent, and sets nothing.
TEST_F(Api, ASubQueuesQuotaAboveItsParentsIsRefused) {
  ASSERT_EQ(Call("PUT", "/v1/queues/org", Json{{"quota_gpus", 2}}).status, 200);
  Reply over = Call("PUT", "/v1/queues/org/team", Json{{"quota_gpus", 4}});
  EXPECT_EQ(over.status, 400) << over.body.dump();
  EXPECT_NE(ErrorOf(over).find("field 'quota_gpus': 4 exceeds the quota of parent queue 'org'"),
            std::string::npos)
      << ErrorOf(over);
  Reply listed = Call("GET", "/v1/queues");
  ASSERT_EQ(listed.status, 200);
  for (const Json& q : listed.body["queues"]) {
    EXPECT_NE(q["name"], "org/team") << "a refused queue is not set";
  }
  EXPECT_EQ(Call("PUT", "/v1/queues/org/team", Json{{"quota_gpus", 2}}).status, 200);
}

// A service's guaranteed replicas are never preempted: over HTTP, a minimum whose GPUs exceed
// its queue's quota is a 400 naming min_replicas and the quota, at creation and in an update,
// and changes nothing.
TEST_F(Api, AServicesGuaranteedReplicasBeyondItsQueuesQuotaAreRefused) {
  RegisterNode("n1");
  ASSERT_EQ(Call("PUT", "/v1/queues/team", Json{{"quota_gpus", 1}}).status, 200);
  auto service = [](int min) {
    return Json{{"name", "chat"},
                {"min_replicas", min},
                {"max_replicas", 3},
                {"port", 8000},
                {"spec", {{"command", {"server"}}, {"gpus", 1}, {"queue", "team"}}}};
  };
  Reply over = Call("POST", "/v1/services", service(2));
  EXPECT_EQ(over.status, 400) << over.body.dump();
  EXPECT_NE(ErrorOf(over).find("field 'min_replicas': 2 guaranteed replica(s) of 1 GPU(s) (2 GPUs "
                               "never preempted) do not fit the quota of queue 'team' (1 GPUs)"),
            std::string::npos)
      << ErrorOf(over);
  EXPECT_EQ(Call("GET", "/v1/services").body["services"].size(), 0u) << "nothing was created";
  Reply fits = Call("POST", "/v1/services", service(1));
  ASSERT_EQ(fits.status, 201) << fits.body.dump();
  Reply raised = Call("POST", "/v1/services/chat/update", Json{{"min_replicas", 2}});
  EXPECT_EQ(raised.status, 400) << raised.body.dump();
  EXPECT_NE(ErrorOf(raised).find("field 'min_replicas'"), std::string::npos) << ErrorOf(raised);
  EXPECT_EQ(Call("GET", "/v1/services/chat").body["service"]["min_replicas"], 1)
      << "the refused update changed nothing";
}

// What the head's shell adds to a service's JSON: its recent events and latest scale from the
// changes it keeps, and its traffic through the proxy over the last minute (here one request
// that found no ready replica: a 503 after the wake timeout).
TEST_F(Api, AServicesJsonCarriesItsRecentEventsLastScaleAndTraffic) {
  RegisterNode("n1");
  Json chat{{"name", "chat"},       {"min_replicas", 1},
            {"max_replicas", 3},    {"port", 8000},
            {"wake_timeout", "1s"}, {"spec", {{"command", {"server"}}, {"gpus", 1}}}};
  ASSERT_EQ(Call("POST", "/v1/services", chat).status, 201);
  ASSERT_EQ(Call("POST", "/v1/services/chat/scale", Json{{"replicas", 2}}).status, 200);

  Reply one = Call("GET", "/v1/services/chat");
  ASSERT_EQ(one.status, 200) << one.body.dump();
  const Json& s = one.body["service"];
  std::vector<std::string> types;
  for (const Json& e : s["events"]) types.push_back(e["type"]);
  EXPECT_EQ(types, (std::vector<std::string>{"service_created", "job_submitted", "service_scaled",
                                             "job_submitted"}))
      << s["events"].dump();
  EXPECT_EQ(s["events"][1]["text"], "replica " + s["events"][1]["job"].dump() + " submitted");
  EXPECT_EQ(s["last_scale"]["cause"], "hand") << s.dump();
  EXPECT_EQ(s["last_scale"]["text"].get<std::string>().rfind("scaled 1 \u2192 2", 0), 0u)
      << s["last_scale"].dump();
  EXPECT_EQ(s["traffic"]["requests"], 0);
  EXPECT_TRUE(s["traffic"]["p50_ms"].is_null()) << "no request answered: no latency";

  Reply list = Call("GET", "/v1/services");
  ASSERT_EQ(list.body["services"].size(), 1u);
  EXPECT_EQ(list.body["services"][0]["last_scale"], s["last_scale"]);
  EXPECT_FALSE(list.body["services"][0].contains("events"))
      << "the list carries the last scale only";

  api_->StartServiceProbes();  // the proxy answers held requests
  net::HttpRequest req;
  req.method = "GET";
  req.target = req.path = "/v/chat/predict";
  req.headers["authorization"] = "Bearer " + std::string(kAdmin);
  req.remote = "127.0.0.1:5555";
  std::promise<net::HttpResponse> answered;
  api_->Handle(req, [&](net::HttpResponse r) { answered.set_value(std::move(r)); });
  EXPECT_EQ(answered.get_future().get().status, 503) << "no replica runs (no agent)";
  const Json t = Call("GET", "/v1/services/chat").body["service"]["traffic"];
  EXPECT_EQ(t["requests"], 1) << t.dump();
  EXPECT_EQ(t["errors_5xx"], 1);
  EXPECT_EQ(t["error_share"], 1.0);
  EXPECT_GE(t["p50_ms"].get<double>(), 1000) << "held for the wake timeout";
  EXPECT_EQ(t["p99_ms"], t["p50_ms"]);
  EXPECT_GT(t["requests_per_s"].get<double>(), 0);
  EXPECT_EQ(Call("GET", "/v1/services").body["services"][0]["traffic"]["requests"], 1);
  api_.reset();  // its probes stop before the head does
}

// QoS classes over HTTP: admins set them, a user's submission above the class is 403 naming the
// limit, bad fields are 400 naming the field and change nothing.
TEST_F(Api, QosRoutesSetListAndEnforceTheLimit) {
  RegisterNode("n1");
  Reply set = Call("PUT", "/v1/qos/normal",
                   Json{{"max_priority", 10}, {"preempt", false}, {"users", {"ana"}}});
  ASSERT_EQ(set.status, 200) << set.body.dump();
  EXPECT_EQ(set.body["qos"]["max_priority"], 10);
  EXPECT_EQ(set.body["qos"]["preempt"], false);
  auto expect_400 = [&](Reply r, const std::string& names) {
    EXPECT_EQ(r.status, 400) << r.body.dump();
    EXPECT_NE(ErrorOf(r).find(names), std::string::npos) << ErrorOf(r);
  };
  expect_400(Call("PUT", "/v1/qos/x", Json{{"max_priority", "high"}}), "field 'max_priority'");
  expect_400(Call("PUT", "/v1/qos/x", Json{{"max_priority", 2000000}}), "field 'max_priority'");
  expect_400(Call("PUT", "/v1/qos/x", Json{{"min_priority", 5}, {"max_priority", 1}}),
             "field 'min_priority'");
  expect_400(Call("PUT", "/v1/qos/x", Json{{"preempt", "no"}}), "field 'preempt'");
  expect_400(Call("PUT", "/v1/qos/x", Json{{"users", "ana"}}), "field 'users'");
  expect_400(Call("PUT", "/v1/qos/x", Json{{"rank", 1}}), "unknown field 'rank'");
  expect_400(Call("PUT", "/v1/qos/b%20d", Json::object()), "field 'name'");
  EXPECT_EQ(Call("PUT", "/v1/qos/other", Json{{"users", {"ana"}}}).status, 409);
  Reply listed = Call("GET", "/v1/qos");
  ASSERT_EQ(listed.body["qos"].size(), 1u) << listed.body.dump();  // nothing else was set
  Reply token = Call("POST", "/v1/tokens", Json{{"user", "ana"}});
  ASSERT_EQ(token.status, 201);
  std::string ana = token.body["token"];
  EXPECT_EQ(Call("PUT", "/v1/qos/mine", Json{{"max_priority", 99}}, ana).status, 403);
  Json job = OneGpuJob();
  job["spec"]["priority"] = 11;
  Reply refused = Call("POST", "/v1/jobs", job, ana);
  EXPECT_EQ(refused.status, 403);
  EXPECT_NE(ErrorOf(refused).find("above the limit 10 of QoS 'normal'"), std::string::npos)
      << ErrorOf(refused);
  job["spec"]["priority"] = 10;
  EXPECT_EQ(Call("POST", "/v1/jobs", job, ana).status, 201);
  EXPECT_EQ(Call("DELETE", "/v1/qos/normal").body["qos"]["name"], "normal");
  EXPECT_EQ(Call("DELETE", "/v1/qos/normal").status, 404);
  EXPECT_EQ(Call("GET", "/v1/qos").body["qos"].size(), 0u);
}

// Reservations over HTTP: admins create, list and delete them; a user is 403; bad fields are
// 400 naming the field; a job may be submitted into one.
TEST_F(Api, ReservationRoutesCreateListDeleteAndAdmitJobs) {
  RegisterNode("n1");
  auto expect_400 = [&](Reply r, const std::string& names) {
    EXPECT_EQ(r.status, 400) << r.body.dump();
    EXPECT_NE(ErrorOf(r).find(names), std::string::npos) << ErrorOf(r);
  };
  const TimeMs far = 4'000'000'000'000;  // in 2096: never past
  Json train{{"name", "train"}, {"nodes", "n1"}, {"start_ms", far}, {"duration", "2h"}};
  expect_400(Call("POST", "/v1/reservations",
                  Json{{"name", "x"}, {"nodes", "n9"}, {"start_ms", far}, {"duration", "1h"}}),
             "field 'nodes': no node 'n9'");
  expect_400(Call("POST", "/v1/reservations",
                  Json{{"name", "x"}, {"nodes", "n1"}, {"start_ms", far}, {"end_ms", far - 1}}),
             "field 'end_ms'");
  expect_400(Call("POST", "/v1/reservations", Json{{"name", "x"}, {"nodes", "n1"}}),
             "field 'start_ms'");
  Reply token = Call("POST", "/v1/tokens", Json{{"user", "ana"}});
  ASSERT_EQ(token.status, 201);
  std::string ana = token.body["token"];
  EXPECT_EQ(Call("POST", "/v1/reservations", train, ana).status, 403);
  EXPECT_EQ(Call("GET", "/v1/reservations").body["reservations"].size(), 0u) << "none made";
  Reply made = Call("POST", "/v1/reservations", train);
  ASSERT_EQ(made.status, 200) << made.body.dump();
  EXPECT_EQ(made.body["reservation"]["end_ms"], far + 2 * kHour);
  Json overlap{{"name", "maint"},
               {"nodes", {"n1"}},
               {"start_ms", far + kHour},
               {"duration", "1h"},
               {"maintenance", true}};
  EXPECT_EQ(Call("POST", "/v1/reservations", overlap).status, 409);
  Json job = OneGpuJob();
  job["spec"]["reservation"] = "train";
  EXPECT_EQ(Call("POST", "/v1/jobs", job, ana).status, 201);
  job["spec"]["reservation"] = "nope";
  expect_400(Call("POST", "/v1/jobs", job, ana), "field 'reservation'");
  EXPECT_EQ(Call("DELETE", "/v1/reservations/train", nullptr, ana).status, 403);
  EXPECT_EQ(Call("DELETE", "/v1/reservations/train").body["reservation"]["name"], "train");
  EXPECT_EQ(Call("DELETE", "/v1/reservations/train").status, 404);
}

// The node JSON names the reservation a node is in now, and whether it is a maintenance
// window; a node reserved later (or never) has neither field.
TEST_F(Api, NodesInsideAReservationNowSayWhich) {
  RegisterNode("n1");
  RegisterNode("n2");
  const TimeMs now = clock_.Now();
  ASSERT_EQ(Call("POST", "/v1/reservations",
                 Json{{"name", "maint"},
                      {"nodes", "n1"},
                      {"start_ms", now},
                      {"duration", "2h"},
                      {"maintenance", true}})
                .status,
            200);
  ASSERT_EQ(
      Call("POST", "/v1/reservations",
           Json{{"name", "later"}, {"nodes", "n2"}, {"start_ms", now + kHour}, {"duration", "1h"}})
          .status,
      200);
  auto node = [&](const std::string& name) {
    Reply nodes = Call("GET", "/v1/nodes");
    for (const Json& n : nodes.body["nodes"]) {
      if (n.value("name", "") == name) return n;
    }
    return Json();
  };
  EXPECT_EQ(node("n1").value("reservation", ""), "maint");
  EXPECT_EQ(node("n1").value("maintenance", false), true);
  EXPECT_FALSE(node("n2").contains("reservation")) << node("n2").dump();
  clock_.Advance(kHour);  // "later" has begun, and it is no maintenance window
  EXPECT_EQ(node("n2").value("reservation", ""), "later");
  EXPECT_EQ(node("n2").value("maintenance", true), false);
  clock_.Advance(2 * kHour);  // both over
  EXPECT_FALSE(node("n1").contains("reservation")) << node("n1").dump();
  EXPECT_FALSE(node("n2").contains("reservation")) << node("n2").dump();
}

TEST_F(Api, UnknownPathsAndMethodsAre404AndAgentsCredentialsOnlyReachAgentRoutes) {
  EXPECT_EQ(Call("GET", "/v1/nope").status, 404);
  EXPECT_EQ(Call("DELETE", "/v1/jobs").status, 404);
  EXPECT_EQ(Call("GET", "/v1/jobs/1/cancel").status, 404);
  EXPECT_EQ(Call("GET", "/v1/jobs", nullptr, "no-such-secret").status, 401);
  EXPECT_EQ(Call("GET", "/v1/jobs", nullptr, kJoin).status, 403);
  EXPECT_EQ(Call("POST", "/v1/agent/sync", Json{{"node", "n1"}}, kAdmin).status, 400)
      << "decoded first: the request names no agent epoch";
}

TEST_F(Api, RequestsAreTimedUnderTheirRoutesPattern) {
  RegisterNode("n1");
  Call("POST", "/v1/jobs", OneGpuJob());
  Call("GET", "/v1/jobs/1");
  Call("PUT", "/v1/queues/org/team", Json{{"quota_gpus", 1}});
  Call("GET", "/v1/nope");
  std::string text = head_->metrics().Render();
  for (const char* route : {"POST /v1/jobs\"", "GET /v1/jobs/{id}\"", "PUT /v1/queues/{queue}\"",
                            "POST /v1/agent/register\"", "GET other\""}) {
    EXPECT_NE(text.find(std::string("route=\"") + route), std::string::npos) << route;
  }
}

}  // namespace
}  // namespace corral::api
