// Services end to end (docs/services.md): a real head and agent on loopback, replicas that are
// real HTTP servers (Python's http.server), requests through the head's /v/NAME/ with curl.
// Two replicas answer through the head, a SIGKILLed replica is replaced while requests keep
// succeeding, a service whose replicas never pass their health check answers 503 with the
// reason after its wake timeout, and `corral services rm` stops every replica.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>

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
    std::ofstream(c_.dir() + "/svc/server.py") << kServer;
    std::filesystem::permissions(c_.dir() + "/svc/server.py",
                                 std::filesystem::perms::owner_all |
                                     std::filesystem::perms::group_read |
                                     std::filesystem::perms::others_read);
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
  auto list = c_.Corral({"services", "-o", "json"});
  EXPECT_EQ(Json::parse(list.out, nullptr, false).value("services", Json::array()).size(), 1u);
}

}  // namespace
}  // namespace corral::testing
