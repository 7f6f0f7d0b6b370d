// Autoscaling end to end (docs/services.md, "Autoscaling"): a real head and agent on loopback,
// replicas that are real HTTP servers (Python's http.server) whose /slow handler holds each
// request 0.4 s, and a bounded load generator (Python threads on loopback) keeping requests in
// flight through the head's /v/NAME/. With short windows (flags): load raises the replicas to
// the maximum, its absence lowers them and then scales the service to zero, and a request to
// the service at zero is held while a replica starts and answered. /metrics shows the
// service's requests by code class, in flight, and replicas ready and desired.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "service_cluster.h"

namespace corral::testing {
namespace {

using Json = nlohmann::json;

// Its ports are apart from the other service suites'.
class ServiceAutoscaling : public ServiceCluster {
 protected:
  ServiceAutoscaling()
      : ServiceCluster("svcscale", PortRangeOfThisTest(14000, 20),
                       {{"server.py", kSlowReplica}, {"load.py", kSlowLoad}}) {}

  int Desired() { return Show().value("desired", -1); }
  int Ready() {
    int n = 0;
    for (const Json& r : Show().value("replicas", Json::array())) {
      n += r.value("running", false) && r.value("ready", false) && !r.value("draining", false);
    }
    return n;
  }
  // The reasons of the service's scale events, in order.
  std::vector<std::string> Scalings() {
    auto r = c_.Corral({"events", "-o", "json"});
    std::vector<std::string> out;
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);) {
      const Json e = Json::parse(line, nullptr, false);
      if (e.is_object() && e.value("type", "") == "service_scaled") {
        out.push_back(e.value("cause", "") + ": " + e.value("reason", ""));
      }
    }
    return out;
  }
};

TEST_F(ServiceAutoscaling, LoadRaisesReplicasItsAbsenceLowersThemToZeroAndARequestWakesIt) {
  // Bad settings are refused naming the field, and create nothing.
  auto bad = c_.Corral({"serve", "bad", "--min-replicas", "1", "--max-replicas", "3", "--port", "0",
                        "--target-in-flight", "none", "--", "/usr/bin/python3", "x.py"});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("field 'target_in_flight'"), std::string::npos) << bad.err;
  bad = c_.Corral({"serve", "bad", "--replicas", "2", "--port", "0", "--scale-to-zero-after", "1m",
                   "--", "/usr/bin/python3", "x.py"});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("field 'scale_to_zero_after'"), std::string::npos) << bad.err;
  EXPECT_NE(c_.Corral({"services", "show", "bad"}).exit_code, 0);
  // Target 1 in flight per replica; six requests held open want six, the maximum is 3.
  auto serve = c_.Corral(
      {"serve", "echo", "--min-replicas", "0", "--max-replicas", "3", "--port", "0", "--health",
       "/health", "--cpus", "0.25", "--target-in-flight", "1", "--scale-up-delay", "2s",
       "--scale-down-delay", "3s", "--scale-to-zero-after",
       // The idle time counts from its first ready replica; long enough that the load below
       // starts well within it on a loaded machine.
       "15s", "--drain-timeout", "5s", "--", "/usr/bin/python3", c_.dir() + "/svc/server.py"});
  ASSERT_EQ(serve.exit_code, 0) << serve.err;
  auto text = c_.Corral({"services", "show", "echo"});
  EXPECT_NE(text.out.find("Autoscale: target 1 in flight per replica, up after 2s, down after "
                          "3s, to zero after 15s"),
            std::string::npos)
      << text.out;
  ASSERT_TRUE(WaitUntil(20000, [&] { return Ready() == 1; })) << Show().dump();

  StartLoad();
  ASSERT_TRUE(WaitUntil(25000, [&] { return Desired() == 3 && Ready() == 3; })) << Show().dump();
  const std::string metrics = RunCommand({"/usr/bin/curl", "-sf", c_.addr() + "/metrics"}).out;
  const Json load = StopLoad();
  ASSERT_TRUE(load.is_object());
  std::cout << "load while scaling up: " << load.dump() << "\n";
  EXPECT_EQ(load.value("failed", -1), 0) << load.dump();
  std::vector<std::string> scalings = Scalings();
  ASSERT_FALSE(scalings.empty());
  EXPECT_NE(scalings[0].find("autoscaler: scaled 1 \u2192 "), std::string::npos) << scalings[0];
  EXPECT_NE(scalings[0].find("requests in flight per replica over 2s, target 1"), std::string::npos)
      << scalings[0];
  EXPECT_NE(metrics.find("corral_service_requests_total{service=\"echo\",code=\"200\","
                         "class=\"2xx\"}"),
            std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("corral_service_requests_in_flight{service=\"echo\"}"), std::string::npos);
  EXPECT_NE(metrics.find("corral_service_replicas_desired{service=\"echo\"} 3"), std::string::npos);
  EXPECT_NE(metrics.find("corral_service_request_duration_seconds_bucket{"), std::string::npos);

  // No load: down to one after the 3 s down-delay, then to zero after 15 s idle.
  ASSERT_TRUE(WaitUntil(45000, [&] {
    return Desired() == 0 && Show().value("replicas", Json::array()).empty();
  })) << Show().dump();
  scalings = Scalings();
  EXPECT_NE(scalings.back().find("autoscaler: scaled 1 \u2192 0: no request in flight for 15s"),
            std::string::npos)
      << scalings.back();

  // A request to the service at zero is held while a replica starts, then answered.
  const auto start = std::chrono::steady_clock::now();
  CommandResult woke =
      RunCommand({"/usr/bin/curl", "-s", "-m", "60", "-o", "-", "-w", "\n%{http_code}", "-H",
                  "Authorization: Bearer " + c_.token(), c_.addr() + "/v/echo/hello"});
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "a request to the service at zero was answered after " << waited << " s\n";
  EXPECT_NE(woke.out.rfind("\n200"), std::string::npos) << woke.out;
  EXPECT_EQ(Desired(), 1);
  EXPECT_NE(Scalings().back().find("request: scaled 0 \u2192 1"), std::string::npos)
      << Scalings().back();
}

}  // namespace
}  // namespace corral::testing
