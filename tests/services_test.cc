// Services end to end (docs/services.md): a real head and agent on loopback, replicas that are
// real HTTP servers (Python's http.server), requests through the head's /v/NAME/ with curl.
// Two replicas answer through the head, a SIGKILLed replica is replaced while requests keep
// succeeding, a service whose replicas never pass their health check answers 503 with the
// reason after its wake timeout, an update of its settings replaces no replica, a PyTorch model
// on the CPU answers through the head, and `corral services rm` stops every replica.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "cluster_fixture.h"

namespace corral::testing {
namespace {

using Json = nlohmann::json;

// A replica: answers GET /health and GET /whoami ({"pid", "port"}) on $PORT, and writes its
// pid to DIR/pids/JOB.
constexpr const char* kServer = R"(import http.server, json, os, sys
port = int(os.environ["PORT"])
assert os.environ["CORRAL_PORT"] == str(port)
with open(os.path.join(sys.argv[1], "pids", os.environ["CORRAL_JOB_ID"]), "w") as f:
    f.write(str(os.getpid()))
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path == "/health" or self.path.startswith("/whoami"):
            body = json.dumps({"pid": os.getpid(), "port": port, "path": self.path}).encode()
            self.send_response(200)
        else:
            body = b"no such page"
            self.send_response(404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
http.server.ThreadingHTTPServer(("", port), Handler).serve_forever()
)";

// A replica that is a PyTorch model on the CPU (Debian's python3-torch): a two-layer MLP with
// fixed weights, loaded on a thread after the server listens, so that it is alive before it is
// ready (GET /health answers 503 until the model is loaded). GET /predict?x=A,B,C&x=... answers
// {"y": the model's outputs, one row per x}.
constexpr const char* kTorchServer = R"(import http.server, json, os, threading, urllib.parse
port = int(os.environ["PORT"])
model = None
def load():
    global model
    import torch
    torch.set_num_threads(1)
    m = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
    with torch.no_grad():
        m[0].weight.copy_(torch.arange(12, dtype=torch.float32).reshape(4, 3) / 10 - 0.5)
        m[0].bias.copy_(torch.tensor([0.1, -0.2, 0.3, -0.4]))
        m[2].weight.copy_(torch.arange(8, dtype=torch.float32).reshape(2, 4) / 4 - 1)
        m[2].bias.copy_(torch.tensor([0.25, -0.75]))
    m.eval()
    model = (torch, m)
threading.Thread(target=load, daemon=True).start()
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        u = urllib.parse.urlparse(self.path)
        code, body = 404, {"error": "no such page"}
        if u.path == "/health":
            code, body = (200, {"model": "loaded"}) if model else (503, {"model": "loading"})
        elif u.path == "/predict" and model:
            torch, m = model
            rows = [[float(v) for v in x.split(",")] for x in urllib.parse.parse_qs(u.query)["x"]]
            with torch.no_grad():
                y = m(torch.tensor(rows, dtype=torch.float32))
            code, body = 200, {"y": y.tolist(), "torch": torch.__version__}
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
    def log_message(self, *args):
        pass
http.server.ThreadingHTTPServer(("", port), Handler).serve_forever()
)";

// The same MLP in doubles: tanh(W1 x + b1), then W2 h + b2, with kTorchServer's weights.
std::vector<double> ExpectedMlp(const std::vector<double>& x) {
  std::vector<double> h(4), y(2);
  const double b1[4] = {0.1, -0.2, 0.3, -0.4}, b2[2] = {0.25, -0.75};
  for (int i = 0; i < 4; ++i) {
    double sum = b1[i];
    for (int j = 0; j < 3; ++j) sum += ((i * 3 + j) / 10.0 - 0.5) * x[j];
    h[i] = std::tanh(sum);
  }
  for (int i = 0; i < 2; ++i) {
    double sum = b2[i];
    for (int j = 0; j < 4; ++j) sum += ((i * 4 + j) / 4.0 - 1) * h[j];
    y[i] = sum;
  }
  return y;
}

// A replica with a readiness path and a liveness path of its own: GET /ready answers 503 while
// DIR/busy-JOB exists (alive, not ready: a model reloading), GET /live answers 500 while
// DIR/sick-JOB exists (wedged), GET /whoami its pid.
constexpr const char* kLiveServer = R"(import http.server, json, os, sys
port = int(os.environ["PORT"])
job = os.environ["CORRAL_JOB_ID"]
with open(os.path.join(sys.argv[1], "pids", job), "w") as f:
    f.write(str(os.getpid()))
def marked(what):
    return os.path.exists(os.path.join(sys.argv[1], what + "-" + job))
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        code = 200
        if self.path == "/ready" and marked("busy"):
            code = 503
        elif self.path == "/live" and marked("sick"):
            code = 500
        body = json.dumps({"pid": os.getpid(), "job": job, "path": self.path}).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
http.server.ThreadingHTTPServer(("", port), Handler).serve_forever()
)";

struct Answer {
  int status = 0;
  std::string body;
};

Answer Get(const LocalCluster& c, const std::string& path, const std::string& token) {
  CommandResult r =
      RunCommand({"/usr/bin/curl", "-s", "-m", "30", "-o", "-", "-w", "\n%{http_code}", "-H",
                  "Authorization: Bearer " + token, c.addr() + path});
  Answer a;
  const auto nl = r.out.rfind('\n');
  if (nl == std::string::npos) return a;
  a.body = r.out.substr(0, nl);
  a.status = std::atoi(r.out.substr(nl + 1).c_str());
  return a;
}

class Services : public ::testing::Test {
 protected:
  Services() : c_("services", 1, 2) {
    std::filesystem::create_directories(c_.dir() + "/svc/pids");
    std::filesystem::permissions(c_.dir() + "/svc", std::filesystem::perms::all);
    std::filesystem::permissions(c_.dir() + "/svc/pids", std::filesystem::perms::all);
    for (const auto& [file, text] :
         {std::pair{"server.py", kServer}, std::pair{"live.py", kLiveServer}}) {
      std::ofstream(c_.dir() + "/svc/" + file) << text;
      std::filesystem::permissions(c_.dir() + "/svc/" + file,
                                   std::filesystem::perms::owner_all |
                                       std::filesystem::perms::group_read |
                                       std::filesystem::perms::others_read);
    }
  }
  std::vector<std::string> Serve(const std::string& name, const std::string& health) {
    return {"serve",
            name,
            "--replicas",
            "2",
            "--port",
            "0",
            "--health",
            health,
            "--cpus",
            "0.25",
            "--",
            "/usr/bin/python3",
            c_.dir() + "/svc/server.py",
            c_.dir() + "/svc"};
  }
  Json Show(const std::string& name) {
    auto r = c_.Corral({"services", "show", name, "-o", "json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return Json::parse(r.out, nullptr, false).value("service", Json::object());
  }
  // The running replicas' job ids.
  std::set<std::string> Running(const std::string& name) {
    std::set<std::string> out;
    for (const Json& r : Show(name).value("replicas", Json::array())) {
      if (r.value("running", false)) out.insert(std::to_string(r.value("job", 0)));
    }
    return out;
  }
  // The pids that answered `n` requests in a row, all 200; empty if one did not.
  std::set<int> PidsAnswering(const std::string& name, int n, std::string* failure) {
    std::set<int> pids;
    for (int i = 0; i < n; ++i) {
      Answer a = Get(c_, "/v/" + name + "/whoami?i=" + std::to_string(i), c_.token());
      if (a.status != 200) {
        *failure = "request " + std::to_string(i) + ": " + std::to_string(a.status) + " " + a.body;
        return {};
      }
      Json j = Json::parse(a.body, nullptr, false);
      EXPECT_EQ(j.value("path", ""), "/whoami?i=" + std::to_string(i));
      pids.insert(j.value("pid", 0));
    }
    return pids;
  }
  int PidOf(const std::string& job) {
    std::ifstream in(c_.dir() + "/svc/pids/" + job);
    int pid = 0;
    in >> pid;
    return pid;
  }

  LocalCluster c_;
};

TEST_F(Services, ReplicasAnswerThroughTheHeadAndAKilledOneIsReplaced) {
  auto made = c_.Corral(Serve("echo", "/health"));
  ASSERT_EQ(made.exit_code, 0) << made.err;
  EXPECT_NE(made.out.find("/v/echo/"), std::string::npos) << made.out;
  // Both replicas ready: requests are spread over both.
  std::string failure;
  std::set<int> pids;
  ASSERT_TRUE(WaitUntil(45000, [&] {
    pids = PidsAnswering("echo", 6, &failure);
    return pids.size() == 2;
  })) << failure;
  std::set<std::string> before = Running("echo");
  ASSERT_EQ(before.size(), 2u);
  auto list = c_.Corral({"services"});
  EXPECT_NE(list.out.find("echo"), std::string::npos) << list.out;
  EXPECT_NE(list.out.find("2/2"), std::string::npos) << list.out;

  // SIGKILL one replica: requests keep succeeding (a refused connection is tried on the other).
  const std::string victim = *before.begin();
  const int victim_pid = PidOf(victim);
  ASSERT_GT(victim_pid, 0);
  ASSERT_EQ(kill(victim_pid, SIGKILL), 0);
  failure.clear();
  pids = PidsAnswering("echo", 10, &failure);
  EXPECT_FALSE(pids.empty()) << "a request failed after the kill: " << failure;
  EXPECT_FALSE(pids.count(victim_pid));
  // A new job replaces it, and it serves too.
  ASSERT_TRUE(WaitUntil(45000, [&] {
    std::set<std::string> now = Running("echo");
    return now.size() == 2 && !now.count(victim);
  })) << Show("echo").dump();
  auto victim_job = c_.Corral({"show", victim, "-o", "json"});
  EXPECT_NE(victim_job.out.find("failed"), std::string::npos) << victim_job.out;
  ASSERT_TRUE(WaitUntil(30000, [&] {
    pids = PidsAnswering("echo", 6, &failure);
    return pids.size() == 2;
  })) << failure;

  // --replicas 2 is its minimum and its maximum: scaling outside is refused, naming the field.
  auto scale = c_.Corral({"services", "scale", "echo", "--replicas", "3"});
  EXPECT_NE(scale.exit_code, 0);
  EXPECT_NE(scale.err.find("field 'replicas'"), std::string::npos) << scale.err;

  // An update of its settings alone replaces no replica: a range, the autoscaler's target and
  // the wake timeout change at once. One that does not hold names the field, changes nothing.
  const std::set<std::string> serving = Running("echo");
  auto bad = c_.Corral({"serve", "update", "echo", "--min-replicas", "4"});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("field 'min_replicas'"), std::string::npos) << bad.err;
  auto settings = c_.Corral({"serve", "update", "echo", "--max-replicas", "3", "--target-in-flight",
                             "5", "--wake-timeout", "20s"});
  ASSERT_EQ(settings.exit_code, 0) << settings.err;
  EXPECT_NE(settings.out.find("settings updated, no replica replaced (replicas 2-3, desired 2)"),
            std::string::npos)
      << settings.out;
  const Json updated = Show("echo");
  EXPECT_EQ(updated.value("max_replicas", 0), 3);
  EXPECT_EQ(updated.value("target_in_flight", 0.0), 5.0);
  EXPECT_EQ(updated.value("wake_timeout_ms", 0), 20000);
  EXPECT_EQ(updated.value("version", 0), 1);
  EXPECT_FALSE(updated.contains("rollout"));
  EXPECT_EQ(Running("echo"), serving);
  ASSERT_EQ(PidsAnswering("echo", 4, &failure).size(), 2u) << failure;

  // Removing it stops every replica; its address answers 404.
  std::set<std::string> last = Running("echo");
  auto rm = c_.Corral({"services", "rm", "echo"});
  ASSERT_EQ(rm.exit_code, 0) << rm.err;
  for (const std::string& job : last) {
    const int pid = PidOf(job);
    EXPECT_TRUE(WaitUntil(30000, [&] { return kill(pid, 0) != 0; })) << "replica " << job;
  }
  EXPECT_EQ(Get(c_, "/v/echo/whoami", c_.token()).status, 404);
  auto gone = c_.Corral({"services", "show", "echo"});
  EXPECT_NE(gone.exit_code, 0);
}

// --live: a replica failing its readiness path only leaves the pool (it is alive: a model
// reloading); one failing its liveness path 3 probes in a row is stopped and replaced, the
// reason naming the path.
TEST_F(Services, AReplicaFailingItsLivePathIsRestartedAndOneOnlyNotReadyIsKept) {
  auto made = c_.Corral({"serve", "live", "--replicas", "1", "--port", "0", "--health", "/ready",
                         "--live", "/live", "--wake-timeout", "2s", "--cpus", "0.25", "--",
                         "/usr/bin/python3", c_.dir() + "/svc/live.py", c_.dir() + "/svc"});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  auto show = c_.Corral({"services", "show", "live"});
  EXPECT_NE(show.out.find("GET /ready (ready), GET /live (live)"), std::string::npos) << show.out;
  ASSERT_TRUE(
      WaitUntil(45000, [&] { return Get(c_, "/v/live/whoami", c_.token()).status == 200; }));
  const std::set<std::string> first = Running("live");
  ASSERT_EQ(first.size(), 1u);
  const std::string job = *first.begin();

  // Not ready, still alive: out of the pool (503 after the wake timeout), never restarted.
  std::ofstream(c_.dir() + "/svc/busy-" + job) << "";
  ASSERT_TRUE(
      WaitUntil(10000, [&] { return Get(c_, "/v/live/whoami", c_.token()).status == 503; }));
  std::this_thread::sleep_for(std::chrono::seconds(4));  // 8 probes: 3 would restart it
  EXPECT_EQ(Running("live"), first) << "a replica that is alive is not restarted";
  std::filesystem::remove(c_.dir() + "/svc/busy-" + job);
  ASSERT_TRUE(
      WaitUntil(10000, [&] { return Get(c_, "/v/live/whoami", c_.token()).status == 200; }));

  // Ready but wedged: its live path fails 3 times in a row; a new replica replaces it.
  std::ofstream(c_.dir() + "/svc/sick-" + job) << "";
  ASSERT_TRUE(WaitUntil(30000, [&] {
    std::set<std::string> now = Running("live");
    return now.size() == 1 && !now.count(job);
  })) << Show("live").dump();
  auto ended = c_.Corral({"show", job, "-o", "json"});
  EXPECT_NE(ended.out.find("liveness: GET /live failed 3 times in a row"), std::string::npos)
      << ended.out;
  ASSERT_TRUE(
      WaitUntil(30000, [&] { return Get(c_, "/v/live/whoami", c_.token()).status == 200; }));
}

TEST_F(Services, APyTorchModelOnTheCpuAnswersThroughTheHead) {
  std::ofstream(c_.dir() + "/svc/model.py") << kTorchServer;
  std::filesystem::permissions(c_.dir() + "/svc/model.py", std::filesystem::perms::owner_all |
                                                               std::filesystem::perms::group_read |
                                                               std::filesystem::perms::others_read);
  auto made = c_.Corral({"serve", "model", "--replicas", "1", "--port", "0", "--health", "/health",
                         "--cpus", "0.5", "--wake-timeout", "2m", "--", "/usr/bin/python3",
                         c_.dir() + "/svc/model.py"});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  // Importing torch takes seconds (more on a loaded machine): ready only once loaded.
  ASSERT_TRUE(WaitUntil(150000, [&] {
    const Json replicas = Show("model").value("replicas", Json::array());
    return replicas.size() == 1 && replicas[0].value("ready", false);
  })) << Show("model").dump();
  const std::vector<std::vector<double>> inputs = {{0.5, -1, 2}, {0, 0, 0}, {3, 1.25, -2}};
  std::string query;
  for (const auto& x : inputs) {
    query += (query.empty() ? "?x=" : "&x=") + std::to_string(x[0]) + "," + std::to_string(x[1]) +
             "," + std::to_string(x[2]);
  }
  Answer a = Get(c_, "/v/model/predict" + query, c_.token());
  ASSERT_EQ(a.status, 200) << a.body;
  const Json answer = Json::parse(a.body, nullptr, false);
  ASSERT_TRUE(answer.contains("y")) << a.body;
  EXPECT_FALSE(answer.value("torch", "").empty()) << a.body;
  ASSERT_EQ(answer["y"].size(), inputs.size()) << a.body;
  for (size_t r = 0; r < inputs.size(); ++r) {
    const std::vector<double> want = ExpectedMlp(inputs[r]);
    ASSERT_EQ(answer["y"][r].size(), 2u) << a.body;
    for (size_t i = 0; i < 2; ++i) {
      EXPECT_NEAR(answer["y"][r][i].get<double>(), want[i], 1e-5) << "row " << r << ": " << a.body;
    }
  }
}

TEST_F(Services, NoReadyReplicaAnswers503WithTheReasonAfterTheWakeTimeoutAndBadInputIsRefused) {
  std::vector<std::string> sick = Serve("sick", "/never-healthy");
  sick.insert(sick.begin() + 2, {"--wake-timeout", "4s"});
  auto made = c_.Corral(sick);
  ASSERT_EQ(made.exit_code, 0) << made.err;
  EXPECT_NE(c_.Corral({"services", "show", "sick"})
                .out.find("Wake:     a request waits up to 4s "
                          "for a ready replica"),
            std::string::npos);
  ASSERT_TRUE(WaitUntil(45000, [&] { return Running("sick").size() == 2; }));
  // Held for the service's wake timeout (4 s, not the default minute), then 503 with why.
  const auto start = std::chrono::steady_clock::now();
  Answer a = Get(c_, "/v/sick/whoami", c_.token());
  const double held =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "a request to a service with no ready replica was answered after " << held << " s\n";
  EXPECT_EQ(a.status, 503) << a.body;
  EXPECT_NE(a.body.find("service 'sick' has no ready replica after 4000 ms: its replicas run but "
                        "none answers its health check"),
            std::string::npos)
      << a.body;
  EXPECT_GE(held, 4.0);
  // A wake timeout out of range is refused naming the field, and creates nothing.
  for (const char* wake : {"0s", "11m", "soon"}) {
    std::vector<std::string> bad_wake = Serve("late", "/health");
    bad_wake.insert(bad_wake.begin() + 2, {"--wake-timeout", wake});
    auto refused = c_.Corral(bad_wake);
    EXPECT_NE(refused.exit_code, 0) << wake;
    EXPECT_NE(refused.err.find("field 'wake_timeout'"), std::string::npos) << refused.err;
  }
  // No token: not served.
  EXPECT_EQ(Get(c_, "/v/sick/whoami", "").status, 401);
  auto dup = c_.Corral(Serve("sick", "/health"));
  EXPECT_NE(dup.exit_code, 0);
  EXPECT_NE(dup.err.find("field 'name'"), std::string::npos) << dup.err;
  auto bad = c_.Corral(
      {"serve", "x", "--replicas", "2", "--min-replicas", "1", "--port", "1", "--", "true"});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("field 'replicas'"), std::string::npos) << bad.err;
  auto no_port = c_.Corral({"serve", "x", "--", "true"});
  EXPECT_NE(no_port.err.find("field 'port'"), std::string::npos) << no_port.err;
  // Guaranteed replicas (never preempted) beyond their queue's quota: refused naming the field.
  ASSERT_EQ(c_.Corral({"queues", "set", "team", "--quota", "1"}).exit_code, 0);
  auto over_quota = c_.Corral({"serve", "x", "--replicas", "2", "--gpus", "1", "--queue", "team",
                               "--port", "0", "--", "true"});
  EXPECT_NE(over_quota.exit_code, 0);
  EXPECT_NE(over_quota.err.find("field 'min_replicas': 2 guaranteed replica(s) of 1 GPU(s) (2 "
                                "GPUs never preempted) do not fit the quota of queue 'team'"),
            std::string::npos)
      << over_quota.err;
  auto list = c_.Corral({"services", "-o", "json"});
  EXPECT_EQ(Json::parse(list.out, nullptr, false).value("services", Json::array()).size(), 1u);
  // Removed, its replicas stop (none outlives the test's cluster).
  const std::set<std::string> sick_replicas = Running("sick");
  ASSERT_EQ(c_.Corral({"services", "rm", "sick"}).exit_code, 0);
  for (const std::string& job : sick_replicas) {
    EXPECT_TRUE(WaitUntil(30000,
                          [&] {
                            const Json shown = Json::parse(
                                c_.Corral({"show", job, "-o", "json"}).out, nullptr, false);
                            return shown.is_object() && shown.value("state", "") == "cancelled";
                          }))
        << "replica " << job;
  }
}

}  // namespace
}  // namespace corral::testing
