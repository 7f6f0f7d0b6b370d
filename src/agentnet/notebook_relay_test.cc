// A notebook's node side (agent/notebook.h, agentnet/notebook_relay.h) against a stand-in for
// Jupyter on loopback: the command it is given, readiness, the relay's token swap and refusals.
#include "agentnet/notebook_relay.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>

#include "agent/sessions/notebook.h"
#include "agent/test_util.h"
#include "net/http_client.h"
#include "net/http_server.h"

namespace corral::agentnet {
namespace {

using namespace std::chrono_literals;

// Answers like Jupyter would only with its token: 200 and the request as JSON, else 403.
net::Handler FakeJupyter(const std::string& token) {
  return [token](net::HttpRequest req, net::Responder respond) {
    if (req.Header("authorization") != "token " + token) {
      return respond(net::JsonError(403, "forbidden", "no token"));
    }
    net::HttpResponse r;
    r.body = nlohmann::json{{"target", req.target}, {"headers", req.headers}}.dump();
    respond(std::move(r));
  };
}

TEST(Notebook, TheAgentServesItOnLoopbackWithItsOwnTokenAndRelaysToIt) {
  agent::testing::TempDir state;
  const std::string run_dir = state.path() + "/runs/7.1.0";
  std::filesystem::create_directories(run_dir + "/logs");
  RunOrder order;
  order.job_id = 7;
  order.command = {"jupyter-notebook"};
  ASSERT_TRUE(agent::PrepareNotebook(&order, run_dir, /*as_root=*/false).ok());
  auto server = agent::ReadNotebook(run_dir);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  EXPECT_EQ(std::filesystem::status(run_dir + "/notebook").permissions(),
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  EXPECT_EQ(order.env["JUPYTER_TOKEN"], server->token);
  EXPECT_GE(server->token.size(), 32u);
  const std::string args = nlohmann::json(order.command).dump();
  EXPECT_NE(args.find("--ip=127.0.0.1"), std::string::npos) << args;
  EXPECT_NE(args.find("--port=" + std::to_string(server->port)), std::string::npos) << args;
  EXPECT_NE(args.find("--NotebookApp.base_url=/s/7/"), std::string::npos) << args;
  EXPECT_EQ(args.find(server->token), std::string::npos) << "not on the command line";
  EXPECT_EQ(args.find("--allow-root"), std::string::npos) << args;

  // Not up yet: not ready.
  EXPECT_EQ(agent::NotebookNote(run_dir, 7, "n1"), "");
  net::HttpServer jupyter(FakeJupyter(server->token), net::HttpServerOptions{.io_threads = 1});
  ASSERT_TRUE(jupyter.Listen("127.0.0.1", server->port).ok());
  jupyter.Start();
  EXPECT_EQ(agent::NotebookNote(run_dir, 7, "n1"), "notebook ready on n1");
  EXPECT_EQ(agent::NotebookEarlyExit(run_dir), "") << "it had answered";

  RelayAuth auth("n1");
  auth.SetCredential("credential-n1");
  NotebookRelay relay(state.path(), &auth);
  net::HttpServer front(
      [](net::HttpRequest, net::Responder r) { r(net::JsonError(404, "not_found", "x")); },
      net::HttpServerOptions{
          .io_threads = 1,
          .takeover_prefix = "/s/",
          .takeover = [&relay](net::HttpRequest req, std::shared_ptr<net::TakenConnection> c) {
            relay.Take(std::move(req), std::move(c));
          }});
  auto port = front.Listen("127.0.0.1", 0);
  ASSERT_TRUE(port.ok());
  front.Start();
  const std::string url = "http://127.0.0.1:" + std::to_string(*port);
  auto get = [&](const std::string& token, const std::string& run, const std::string& path) {
    net::HttpClient client(url, token);
    std::map<std::string, std::string> headers;
    if (!run.empty()) headers["X-Corral-Run"] = run;
    headers["Connection"] = "close";
    auto r = client.Request("GET", path, "", 5s, headers);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : net::HttpResponse{};
  };
  auto grant = [](const std::string& run, const std::string& node = "n1",
                  const std::string& credential = "credential-n1") {
    return SignRelayGrant(NodeGrantKey(credential),
                          {node, run, SystemClock().Now() + kRelayGrantLifetimeMs});
  };
  auto ok = get(grant("7.1"), "7.1", "/s/7/api/kernels?x=1");
  EXPECT_EQ(ok.status, 200) << ok.body;
  auto seen = nlohmann::json::parse(ok.body, nullptr, false);
  EXPECT_EQ(seen["target"], "/s/7/api/kernels?x=1");
  EXPECT_FALSE(seen["headers"].contains("x-corral-run"));
  EXPECT_EQ(seen["headers"].dump().find("cg1."), std::string::npos)
      << "the grant is not passed on to Jupyter";
  EXPECT_EQ(get("join-secret", "7.1", "/s/7/").status, 401) << "the join token opens nothing";
  EXPECT_EQ(get(grant("8.1"), "7.1", "/s/7/").status, 403) << "another run's grant";
  EXPECT_EQ(get(grant("7.1", "n2", "credential-n2"), "7.1", "/s/7/").status, 401)
      << "another node's grant";
  EXPECT_EQ(get(grant("../7.1"), "../7.1", "/s/7/").status, 400);
  EXPECT_EQ(get(grant("7.1"), "7.1", "/s/8/").status, 400) << "another job's path";
  EXPECT_EQ(get(grant("9.1"), "9.1", "/s/9/").status, 404) << "no notebook in that run";
}

// A WebSocket relayed to Jupyter that passes nothing either way is closed after the relay's
// idle time, and the address's files with it; a plain request gets the shorter one.
TEST(Notebook, TheRelayClosesASilentConnectionAfterItsIdleTime) {
  agent::testing::TempDir state;
  const std::string run_dir = state.path() + "/runs/7.1.0";
  std::filesystem::create_directories(run_dir + "/logs");
  RunOrder order;
  order.job_id = 7;
  order.command = {"jupyter-notebook"};
  ASSERT_TRUE(agent::PrepareNotebook(&order, run_dir, /*as_root=*/false).ok());
  auto server = agent::ReadNotebook(run_dir);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  // A kernel channel that never says anything: Jupyter holds the request unanswered.
  std::mutex mu;
  std::vector<net::Responder> held;
  net::HttpServer jupyter(
      [&](net::HttpRequest, net::Responder r) {
        std::lock_guard lock(mu);
        held.push_back(std::move(r));
      },
      net::HttpServerOptions{.io_threads = 1});
  ASSERT_TRUE(jupyter.Listen("127.0.0.1", server->port).ok());
  jupyter.Start();
  RelayAuth auth("n1");
  auth.SetCredential("credential-n1");
  NotebookRelay relay(state.path(), &auth, net::SpliceIdle{.http = 300ms, .websocket = 900ms});
  net::HttpServer front(
      [](net::HttpRequest, net::Responder r) { r(net::JsonError(404, "not_found", "x")); },
      net::HttpServerOptions{
          .io_threads = 1,
          .takeover_prefix = "/s/",
          .takeover = [&relay](net::HttpRequest req, std::shared_ptr<net::TakenConnection> c) {
            relay.Take(std::move(req), std::move(c));
          }});
  auto port = front.Listen("127.0.0.1", 0);
  ASSERT_TRUE(port.ok());
  front.Start();
  // How long a silent request through the relay lasts before the relay closes it.
  auto lasts = [&](bool websocket) {
    net::HttpClient client(
        "http://127.0.0.1:" + std::to_string(*port),
        SignRelayGrant(NodeGrantKey("credential-n1"), {"n1", "7.1", SystemClock().Now() + 60000}));
    std::map<std::string, std::string> headers = {{"X-Corral-Run", "7.1"}};
    if (websocket) {
      headers["Connection"] = "Upgrade";
      headers["Upgrade"] = "websocket";
    }
    auto t0 = std::chrono::steady_clock::now();
    auto r = client.Request("GET", "/s/7/api/kernels/k/channels", "", 10s, headers);
    EXPECT_FALSE(r.ok()) << "closed unanswered, got " << (r.ok() ? r->status : 0);
    return std::chrono::steady_clock::now() - t0;
  };
  auto plain = lasts(false);
  EXPECT_GE(plain, 250ms);
  EXPECT_LT(plain, 800ms);
  auto websocket = lasts(true);
  EXPECT_GE(websocket, 850ms);
  EXPECT_LT(websocket, 5s);
  // Jupyter's side of each was closed too: it saw its clients go.
  std::lock_guard lock(mu);
  EXPECT_EQ(held.size(), 2u);
}

TEST(Notebook, OneThatNeverAnsweredFailsWithItsLogTail) {
  agent::testing::TempDir state;
  const std::string run_dir = state.path() + "/run";
  std::filesystem::create_directories(run_dir + "/logs");
  agent::testing::Touch(run_dir + "/logs/stderr");
  EXPECT_NE(agent::NotebookEarlyExit(run_dir).find("its log is empty"), std::string::npos);
  {
    std::ofstream log(run_dir + "/logs/stderr");
    for (int i = 0; i < 500; ++i) log << "line " << i << "\n";
    log << "ModuleNotFoundError: no module named notebook\n";
  }
  std::string why = agent::NotebookEarlyExit(run_dir);
  EXPECT_EQ(why.rfind("the notebook server exited before it answered", 0), 0u) << why;
  EXPECT_NE(why.find("ModuleNotFoundError"), std::string::npos) << why;
  EXPECT_LT(why.size(), 2200u) << "the tail, not the whole log";
}

}  // namespace
}  // namespace corral::agentnet
