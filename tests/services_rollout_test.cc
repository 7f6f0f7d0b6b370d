// Rolling updates end to end (docs/services.md): a real head and agent on loopback, replicas
// that are real HTTP servers (Python's http.server) reporting their version, and a bounded load
// generator (four Python threads on loopback) calling the service through the head's /v/NAME/
// throughout, with POST: the head never sends a POST twice, so a replica stopped with a request
// in flight (not drained) would show as a failed request. An update under load loses no request and
// ends with every replica on the new version; a version that never becomes ready is rolled back
// while the old replicas serve.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "service_cluster.h"

namespace corral::testing {
namespace {

using Json = nlohmann::json;

// A replica of version argv[1]: GET /health answers 200 (503 for version "bad": never ready),
// GET or POST /version answers {"version", "pid"} after 20 ms of work, so that requests are in
// flight when a replica is asked to leave.
constexpr const char* kVersionServer = R"(import http.server, json, os, sys, time
port, version = int(os.environ["PORT"]), sys.argv[1]
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        code = 200
        if self.path == "/health":
            code = 503 if version == "bad" else 200
        elif self.path.startswith("/version"):
            time.sleep(0.02)
        else:
            code = 404
        body = json.dumps({"version": version, "pid": os.getpid()}).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.do_GET()
    def log_message(self, *args):
        pass
http.server.ThreadingHTTPServer(("", port), Handler).serve_forever()
)";

// Four threads call POST BASE/v/NAME/version in a loop until STOP exists (at most 55 s), and
// write {"ok", "failed", "failures", "versions": {version: count}} to OUT.
constexpr const char* kLoad = R"(import http.client, json, os, sys, threading, time, urllib.parse
base, token, name, stop, out = sys.argv[1:6]
u = urllib.parse.urlparse(base)
deadline = time.time() + 55
lock = threading.Lock()
res = {"ok": 0, "failed": 0, "failures": [], "versions": {}}
def call():
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    try:
        c.request("POST", "/v/" + name + "/version", body=b"{}",
                  headers={"Authorization": "Bearer " + token})
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()
def worker():
    while not os.path.exists(stop) and time.time() < deadline:
        try:
            status, body = call()
            failure = None if status == 200 else "%d %r" % (status, body[:300])
        except Exception as e:
            failure = repr(e)
        with lock:
            if failure:
                res["failed"] += 1
                res["failures"].append(failure)
            else:
                v = json.loads(body)["version"]
                res["ok"] += 1
                res["versions"][v] = res["versions"].get(v, 0) + 1
        time.sleep(0.005)
threads = [threading.Thread(target=worker) for _ in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
with open(out, "w") as f:
    json.dump(res, f)
)";

class ServiceRollouts : public ServiceCluster {
 protected:
  ServiceRollouts()
      : ServiceCluster("svcroll", PortRangeOfThisTest(10000, 40),
                       {{"server.py", kVersionServer}, {"load.py", kLoad}}) {}

  void Serve(const std::string& version) {
    auto r = c_.Corral({"serve", "echo", "--replicas", "2", "--port", "0", "--health", "/health",
                        "--cpus", "0.25", "--drain-timeout", "20s", "--", "/usr/bin/python3",
                        c_.dir() + "/svc/server.py", version});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  // The running, ready replicas' job ids, each with the version it runs.
  std::map<int64_t, int> Serving() {
    std::map<int64_t, int> out;
    for (const Json& r : Show().value("replicas", Json::array())) {
      if (r.value("running", false) && r.value("ready", false) && !r.value("draining", false)) {
        out[r.value("job", int64_t{0})] = r.value("version", 0);
      }
    }
    return out;
  }
};

TEST_F(ServiceRollouts, AnUpdateUnderLoadLosesNoRequestAndEndsOnTheNewVersion) {
  Serve("v1");
  ASSERT_TRUE(WaitUntil(45000, [&] { return Serving().size() == 2; })) << Show().dump();
  const std::map<int64_t, int> first = Serving();
  StartLoad();
  std::this_thread::sleep_for(std::chrono::seconds(1));  // load on the old version first
  auto update = c_.Corral({"serve", "update", "echo", "--ready-timeout", "40s", "--",
                           "/usr/bin/python3", c_.dir() + "/svc/server.py", "v2"});
  ASSERT_EQ(update.exit_code, 0) << update.err;
  EXPECT_NE(update.out.find("version 2"), std::string::npos) << update.out;
  ASSERT_TRUE(WaitUntil(50000, [&] {
    const Json s = Show();
    if (s.contains("rollout")) return false;
    std::map<int64_t, int> now = Serving();
    return now.size() == 2 && std::all_of(now.begin(), now.end(), [&](const auto& r) {
             return r.second == 2 && !first.count(r.first);
           });
  })) << Show().dump();
  std::this_thread::sleep_for(std::chrono::seconds(1));  // load on the new version last
  const Json load = StopLoad();
  ASSERT_TRUE(load.is_object());
  std::cout << "load during the update: " << load.dump() << "\n";
  EXPECT_EQ(load.value("failed", -1), 0) << load.dump();
  EXPECT_GT(load.value("ok", 0), 20) << load.dump();
  EXPECT_GT(load["versions"].value("v1", 0), 0) << load.dump();
  EXPECT_GT(load["versions"].value("v2", 0), 0) << load.dump();
  const Json s = Show();
  EXPECT_EQ(s.value("version", 0), 2);
  EXPECT_NE(s.value("last_rollout", "").find("version 2 ready on 2"), std::string::npos)
      << s.dump();
  auto text = c_.Corral({"services", "show", "echo"});
  EXPECT_NE(text.out.find("Last update: version 2 ready"), std::string::npos) << text.out;
}

TEST_F(ServiceRollouts, AVersionNeverReadyIsRolledBackWhileTheOldOnesServe) {
  Serve("v1");
  ASSERT_TRUE(WaitUntil(45000, [&] { return Serving().size() == 2; })) << Show().dump();
  const std::map<int64_t, int> first = Serving();
  StartLoad();
  auto update = c_.Corral({"serve", "update", "echo", "--ready-timeout", "5s", "--",
                           "/usr/bin/python3", c_.dir() + "/svc/server.py", "bad"});
  ASSERT_EQ(update.exit_code, 0) << update.err;
  // A second update while one is in progress is refused.
  auto again = c_.Corral({"serve", "update", "echo", "--", "/usr/bin/python3", "x.py"});
  EXPECT_NE(again.exit_code, 0);
  EXPECT_NE(again.err.find("being updated"), std::string::npos) << again.err;
  ASSERT_TRUE(WaitUntil(40000, [&] {
    return Show().value("last_rollout", "").find("rolled back") != std::string::npos;
  })) << Show().dump();
  const Json load = StopLoad();
  ASSERT_TRUE(load.is_object());
  std::cout << "load during the rollback: " << load.dump() << "\n";
  EXPECT_EQ(load.value("failed", -1), 0) << load.dump();
  EXPECT_GT(load.value("ok", 0), 20) << load.dump();
  EXPECT_EQ(load["versions"].size(), 1u) << "only the old version served: " << load.dump();
  const Json s = Show();
  EXPECT_EQ(s.value("version", 0), 1);
  EXPECT_FALSE(s.contains("rollout"));
  EXPECT_NE(s.value("last_rollout", "").find("version 2 rolled back to version 1"),
            std::string::npos)
      << s.dump();
  EXPECT_NE(s.value("last_rollout", "").find("within 5s"), std::string::npos) << s.dump();
  EXPECT_EQ(Serving(), first) << "the old replicas served throughout, untouched";
  auto text = c_.Corral({"services", "show", "echo"});
  EXPECT_NE(text.out.find("rolled back"), std::string::npos) << text.out;
  // The rollback is an event of the service's.
  auto events = c_.Corral({"events", "-o", "json"});
  EXPECT_NE(events.out.find("service_rollout_ended"), std::string::npos) << events.out;
  // Its bad replica is stopped: only the two old ones stay.
  ASSERT_TRUE(WaitUntil(20000, [&] { return Show().value("replicas", Json::array()).size() == 2; }))
      << Show().dump();
}

}  // namespace
}  // namespace corral::testing
