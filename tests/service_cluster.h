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

class ServiceCluster : public ::testing::Test {
 public:
  using Json = nlohmann::json;
  // Replicas with --port 0 take ports from their node's range, lowest free first: each test's
  // agent gets `slots` ports of its own from `first` up (by the test's name), so that tests
  // run at once (ctest -j) on one machine never bind one port, where one cluster's proxy
  // would reach the other's replica.
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
