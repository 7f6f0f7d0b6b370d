#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "agentnet/advertise.h"
#include "agentnet/log_server.h"

namespace corral::agentnet {
namespace {

TEST(Advertise, LoopbackHeadMeansLoopbackAddress) {
  auto a = LocalAddressToward("127.0.0.1", 7070);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(*a, "127.0.0.1");
  EXPECT_EQ(InterfaceOf("127.0.0.1"), "lo");
  EXPECT_EQ(InterfaceOf("192.0.2.55"), "");  // TEST-NET-1: on no interface here
}

TEST(Advertise, FlagWinsAndIsValidated) {
  EXPECT_EQ(*AdvertiseAddress("10.0.0.7", "127.0.0.1", 7070), "10.0.0.7");
  EXPECT_EQ(*AdvertiseAddress("gpu-07.example", "127.0.0.1", 7070), "gpu-07.example");
  EXPECT_EQ(*AdvertiseAddress("fd00::7", "127.0.0.1", 7070), "fd00::7");
  for (const char* bad : {"10.0.0.7:8080", "a b", "x/y"}) {
    auto r = AdvertiseAddress(bad, "127.0.0.1", 7070);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("--advertise-addr"), std::string::npos);
  }
  EXPECT_FALSE(LocalAddressToward("no-such-host.invalid", 7070).ok());
}

TEST(LogServer, ServesOneTasksLogFromAnOffset) {
  auto dir = std::filesystem::temp_directory_path() / ("agentnet-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir / "runs" / "3.1.0");
  std::ofstream(dir / "runs" / "3.1.0" / "stdout") << "task zero\n";
  std::ofstream(dir / "runs" / "3.1.0" / "stdout.1") << "task one\n";
  net::HttpRequest req;
  req.method = "GET";
  req.path = "/v1/runs/3.1/logs";
  req.headers["authorization"] = "Bearer secret";
  req.query = {{"replica", "0"}, {"task", "1"}, {"offset", "5"}};
  net::HttpResponse r = ServeLog(dir.string(), "secret", req);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "one\n");
  EXPECT_EQ(r.headers["X-Corral-Next-Offset"], "9");
  req.query = {{"task", "x"}};
  r = ServeLog(dir.string(), "secret", req);
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("task"), std::string::npos);
  req.query = {{"task", "4"}};
  EXPECT_EQ(ServeLog(dir.string(), "secret", req).status, 404);
  req.headers["authorization"] = "Bearer wrong";
  req.query = {};
  EXPECT_EQ(ServeLog(dir.string(), "secret", req).status, 401);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace corral::agentnet
