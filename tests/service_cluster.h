// What the service suites share: a local cluster (one agent, 4 GPUs) whose replicas take ports
// from a range of the test's own, the replica's and the load generator's Python scripts under
// DIR/svc, the service's view, and a load generator run on a thread until told to stop.
#pragma once

#include <utility>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "cluster_fixture.h"

namespace corral::testing {

// A replica for the service suites: answers GET (on /slow after 0.4 s) with its job and pid.
inline constexpr const char* kSlowReplica = R"(import http.server, json, os, time
port = int(os.environ["PORT"])
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path.startswith("/slow"):
            time.sleep(0.4)
        body = json.dumps({"job": os.environ["CORRAL_JOB_ID"], "pid": os.getpid()}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
http.server.ThreadingHTTPServer(("", port), Handler).serve_forever()
)";

// Six threads call GET BASE/v/NAME/slow until STOP exists (at most 50 s); OUT gets {"ok",
// "failed", "failures", "jobs"} (the replicas' jobs that answered).
inline constexpr const char* kSlowLoad = R"(import http.client, json, os, sys, threading, time
import urllib.parse
base, token, name, stop, out = sys.argv[1:6]
u = urllib.parse.urlparse(base)
deadline = time.time() + 50
lock = threading.Lock()
res = {"ok": 0, "failed": 0, "failures": [], "jobs": []}
def worker():
    while not os.path.exists(stop) and time.time() < deadline:
        try:
            c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
            c.request("GET", "/v/" + name + "/slow", headers={"Authorization": "Bearer " + token})
            r = c.getresponse()
            body = r.read()
            c.close()
            failure = None if r.status == 200 else "%d %r" % (r.status, body[:300])
        except Exception as e:
            failure = repr(e)
        with lock:
            if failure:
                res["failed"] += 1
                res["failures"].append(failure)
            else:
                res["ok"] += 1
                job = json.loads(body)["job"]
                if job not in res["jobs"]:
                    res["jobs"].append(job)
threads = [threading.Thread(target=worker) for _ in range(6)]
for t in threads:
    t.start()
for t in threads:
    t.join()
with open(out, "w") as f:
    json.dump(res, f)
)";

class ServiceCluster : public ::testing::Test {
 public:
  using Json = nlohmann::json;
  // Replicas with --port 0 take ports from their node's range, lowest free first: each test's
  // agent gets `slots` ports of its own from `first` up (by the test's name), so that tests
  // run at once (ctest -j) on one machine never bind one port, where one cluster's proxy
  // would reach the other's replica. Each suite's ranges lie below the kernel's ephemeral ports
  // (32768 and up), where any outgoing connection of the machine may hold one.
  static std::string PortRangeOfThisTest(int first, int ranges) {
    const std::string test = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    const int base = first + static_cast<int>(std::hash<std::string>{}(test) % ranges) * 100;
    return std::to_string(base) + "-" + std::to_string(base + 99);
  }

 protected:
  // `scripts`: file name and text, written under DIR/svc readable by the agent's job user;
  // the load generator is "load.py": argv BASE TOKEN SERVICE STOP_FILE OUT_FILE.
  // `head_flags`: the head's own flags (e.g. --min-runtime-before-preempt).
  ServiceCluster(const std::string& name, const std::string& port_range,
                 const std::vector<std::pair<std::string, std::string>>& scripts,
                 std::vector<std::string> head_flags = {})
      : c_(name, 1, 4, std::move(head_flags), {"--run-as", "agent", "--port-range", port_range}) {
    namespace fs = std::filesystem;
    fs::create_directories(c_.dir() + "/svc");
    fs::permissions(c_.dir() + "/svc", fs::perms::all);
    for (const auto& [file, text] : scripts) {
      const std::string path = c_.dir() + "/svc/" + file;
      std::ofstream(path) << text;
      fs::permissions(path, fs::perms::owner_all | fs::perms::group_read | fs::perms::others_read);
    }
  }
  ~ServiceCluster() override { StopLoad(); }

  Json Show(const std::string& service = "echo") {
    auto r = c_.Corral({"services", "show", service, "-o", "json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return Json::parse(r.out, nullptr, false).value("service", Json::object());
  }
  void StartLoad(const std::string& service = "echo") {
    load_ = std::thread([this, service] {
      RunCommand({"/usr/bin/python3", c_.dir() + "/svc/load.py", c_.addr(), c_.token(), service,
                  c_.dir() + "/svc/stop", c_.dir() + "/svc/load.json"});
    });
  }
  // What the load generator wrote; null when none ran.
  Json StopLoad() {
    if (!load_.joinable()) return Json();
    std::ofstream(c_.dir() + "/svc/stop") << "stop";
    load_.join();
    std::ifstream in(c_.dir() + "/svc/load.json");
    return Json::parse(in, nullptr, false);
  }

  LocalCluster c_;
  std::thread load_;
};

}  // namespace corral::testing
