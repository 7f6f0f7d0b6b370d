// The web dashboard in a real browser: a real head and agents on loopback (LocalCluster), and
// Debian's Chromium driven headless by puppeteer-core (tests/browser/dashboard_test.mjs). Skips
// with the reason where Chromium or the npm packages are not installed (scripts/setup.sh
// installs both).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <vector>

#include "cluster_fixture.h"

namespace corral::testing {
namespace {

constexpr char kChromium[] = "/usr/bin/chromium";

TEST(Browser, SignInSeeAJobArriveReadItsLogAndTheNodesGpus) {
  if (access(kChromium, X_OK) != 0) {
    GTEST_SKIP()
        << "Chromium not installed (Debian package chromium; scripts/setup.sh installs it)";
  }
  const std::string dir = CORRAL_BROWSER_DIR;
  if (!std::filesystem::exists(dir + "/node_modules/puppeteer-core")) {
    GTEST_SKIP() << "puppeteer-core not installed in " << dir
                 << " (scripts/setup.sh runs npm ci there)";
  }
  constexpr int kNodes = 2;
  constexpr int kGpus = 4;
  LocalCluster c("browser", kNodes, kGpus);
  // Measured use for the heat map: some GPUs busy, some not (the agents read it each sample).
  std::ofstream(c.dir() + "/agents/node1/simulated-gpu-use") << "0 97 60000\n1 3 2000\n2 55\n";
  std::ofstream(c.dir() + "/agents/node2/simulated-gpu-use") << "0 12\n3 88\n";
  ASSERT_EQ(c.Corral({"queues", "set", "default", "--quota", "4"}).exit_code, 0);
  ASSERT_EQ(c.Corral({"queues", "set", "train", "--quota", "2"}).exit_code, 0);
  auto user = c.Corral({"token", "create", "--user", "ana"});
  ASSERT_EQ(user.exit_code, 0) << user.err;
  std::string user_token = user.out.substr(0, user.out.find('\n'));

  const char* shots = getenv("SCREENSHOT_DIR");
  auto r = RunCommand({"/usr/bin/node", dir + "/dashboard_test.mjs"},
                      {{"CORRAL_ADDR", c.addr()},
                       {"CORRAL_TOKEN", c.token()},
                       {"CORRAL_USER_TOKEN", user_token},
                       {"CORRAL_BIN", CorralBin()},
                       {"CHROMIUM", kChromium},
                       {"SCREENSHOT_DIR", shots ? shots : c.dir() + "/screenshots"},
                       {"NODES", std::to_string(kNodes)},
                       {"GPUS_PER_NODE", std::to_string(kGpus)},
                       {"HOME", c.dir()}});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err << "\n(cluster and screenshots in " << c.dir() << ")";
  std::cout << r.out;
}

// A job's page draws its usage series (docs/efficiency.md) as an SVG plot.
TEST(Browser, AJobsPagePlotsItsUseOverTime) {
  if (access(kChromium, X_OK) != 0) {
    GTEST_SKIP()
        << "Chromium not installed (Debian package chromium; scripts/setup.sh installs it)";
  }
  const std::string dir = CORRAL_BROWSER_DIR;
  if (!std::filesystem::exists(dir + "/node_modules/puppeteer-core")) {
    GTEST_SKIP() << "puppeteer-core not installed in " << dir;
  }
  LocalCluster c("browser-eff", 1, 2, {}, {"--run-as", "agent", "--usage-interval", "1"});
  std::ofstream(c.dir() + "/agents/node1/simulated-gpu-use") << "0 60 1000\n1 60 1000\n";
  std::string id = c.Submit({"--gpus", "1", "--", "sleep", "60"});
  const char* shots = getenv("SCREENSHOT_DIR");
  auto r = RunCommand({"/usr/bin/node", dir + "/efficiency_test.mjs"},
                      {{"CORRAL_ADDR", c.addr()},
                       {"CORRAL_TOKEN", c.token()},
                       {"JOB_ID", id},
                       {"WANT_UTIL", "60"},
                       {"CHROMIUM", kChromium},
                       {"SCREENSHOT_DIR", shots ? shots : c.dir() + "/screenshots"},
                       {"HOME", c.dir()}});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err << "\n(cluster and screenshots in " << c.dir() << ")";
  std::cout << r.out;
  c.Corral({"cancel", id});
}

// The overview plots the cluster's series (GPUs held and their use, jobs pending and running)
// as SVG, following the head's points (one a second here).
TEST(Browser, TheOverviewPlotsTheClustersUseAndQueuesOverTime) {
  if (access(kChromium, X_OK) != 0) {
    GTEST_SKIP()
        << "Chromium not installed (Debian package chromium; scripts/setup.sh installs it)";
  }
  const std::string dir = CORRAL_BROWSER_DIR;
  if (!std::filesystem::exists(dir + "/node_modules/puppeteer-core")) {
    GTEST_SKIP() << "puppeteer-core not installed in " << dir;
  }
  LocalCluster c("browser-plots", 2, 4, {"--cluster-series-step", "1s"});
  std::ofstream(c.dir() + "/agents/node1/simulated-gpu-use") << "0 80\n1 40\n2 90\n3 70\n";
  std::ofstream(c.dir() + "/agents/node2/simulated-gpu-use") << "0 30\n1 10\n";
  // Three jobs of 2 GPUs hold 6 of the 8; two of 4 find no node with 4 free and wait.
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) ids.push_back(c.Submit({"--gpus", "2", "--", "sleep", "300"}));
  for (int i = 0; i < 2; ++i) ids.push_back(c.Submit({"--gpus", "4", "--", "sleep", "300"}));
  const char* shots = getenv("SCREENSHOT_DIR");
  auto r = RunCommand({"/usr/bin/node", dir + "/cluster_plots_test.mjs"},
                      {{"CORRAL_ADDR", c.addr()},
                       {"CORRAL_TOKEN", c.token()},
                       {"WANT_GPUS", "8"},
                       {"WANT_HELD", "6"},
                       {"WANT_PENDING", "2"},
                       {"WANT_RUNNING", "3"},
                       {"JOB_ID", ids.front()},
                       {"CHROMIUM", kChromium},
                       {"SCREENSHOT_DIR", shots ? shots : c.dir() + "/screenshots"},
                       {"HOME", c.dir()}});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err << "\n(cluster and screenshots in " << c.dir() << ")";
  std::cout << r.out;
  for (const std::string& id : ids) c.Corral({"cancel", id});
}

// A replica for the services page: /health and / answer 200 at once, /work after 20 ms,
// /fail 500.
constexpr char kPageReplica[] = R"(import http.server, os, time
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        code = 500 if self.path.startswith("/fail") else 200
        if self.path.startswith("/work"):
            time.sleep(0.02)
        body = b"ok" if code == 200 else b"failed"
        self.send_response(code)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
http.server.ThreadingHTTPServer(("", int(os.environ["PORT"])), Handler).serve_forever()
)";

// The Services page and a service's own page show what the API gives of a real service: its
// replicas, its traffic through the head (tests/browser/services_test.mjs sends a known load)
// and its recent events.
TEST(Browser, TheServicesPagesShowAServicesTrafficReplicasAndEventsAsTheApiGivesThem) {
  if (access(kChromium, X_OK) != 0) {
    GTEST_SKIP()
        << "Chromium not installed (Debian package chromium; scripts/setup.sh installs it)";
  }
  const std::string dir = CORRAL_BROWSER_DIR;
  if (!std::filesystem::exists(dir + "/node_modules/puppeteer-core")) {
    GTEST_SKIP() << "puppeteer-core not installed in " << dir;
  }
  // The agent's own port range, away from the service suites' (tests/service_cluster.h).
  LocalCluster c("browser-svc", 1, 4, {}, {"--run-as", "agent", "--port-range", "17600-17699"});
  namespace fs = std::filesystem;
  fs::create_directories(c.dir() + "/svc");
  fs::permissions(c.dir() + "/svc", fs::perms::all);
  const std::string server = c.dir() + "/svc/server.py";
  std::ofstream(server) << kPageReplica;
  fs::permissions(server, fs::perms::owner_all | fs::perms::group_read | fs::perms::others_read);
  auto served =
      c.Corral({"serve", "echo", "--min-replicas", "1", "--max-replicas", "3", "--port", "0",
                "--health", "/health", "--cpus", "0.25", "--", "/usr/bin/python3", server});
  ASSERT_EQ(served.exit_code, 0) << served.err;
  auto ready = [&](size_t want) {
    return WaitUntil(45000, [&] {
      auto show = nlohmann::json::parse(c.Corral({"services", "show", "echo", "-o", "json"}).out,
                                        nullptr, false);
      size_t n = 0;
      for (const auto& r : show["service"].value("replicas", nlohmann::json::array())) {
        n += r.value("running", false) && r.value("ready", false) ? 1 : 0;
      }
      return n == want;
    });
  };
  ASSERT_TRUE(ready(1));
  ASSERT_EQ(c.Corral({"services", "scale", "echo", "--replicas", "2"}).exit_code, 0);
  ASSERT_TRUE(ready(2));

  const char* shots = getenv("SCREENSHOT_DIR");
  auto r = RunCommand({"/usr/bin/node", dir + "/services_test.mjs"},
                      {{"CORRAL_ADDR", c.addr()},
                       {"CORRAL_TOKEN", c.token()},
                       {"WANT_NODE", "node1"},
                       {"CHROMIUM", kChromium},
                       {"SCREENSHOT_DIR", shots ? shots : c.dir() + "/screenshots"},
                       {"HOME", c.dir()}});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err << "\n(cluster and screenshots in " << c.dir() << ")";
  std::cout << r.out;
  // The CLI shows the same traffic (the load is still within the minute).
  const std::string show = c.Corral({"services", "show", "echo"}).out;
  EXPECT_NE(show.find("requests/s over the last "), std::string::npos) << show;
  EXPECT_NE(show.find(", 10.0% answered 5xx, p50 "), std::string::npos) << show;
  EXPECT_NE(show.find("Scaled:   scaled 1 \u2192 2 by "), std::string::npos) << show;
  c.Corral({"services", "rm", "echo"});
}

// `files` files of `size` bytes each under `dir`, a dataset's source.
void MakeDatasetSource(const std::string& dir, int files, int size) {
  std::filesystem::create_directories(dir);
  for (int i = 0; i < files; ++i) {
    std::ofstream(dir + "/" + std::to_string(i) + ".bin")
        << std::string(size, static_cast<char>('a' + i % 26));
  }
}

// The Datasets page shows what the API gives: two datasets, one staged on a node by a job that
// ran there (tests/browser/datasets_test.mjs checks each table against the API).
TEST(Browser, TheDatasetsPageShowsEachDatasetTheNodesCachesAndTheSourcesRates) {
  if (access(kChromium, X_OK) != 0) {
    GTEST_SKIP()
        << "Chromium not installed (Debian package chromium; scripts/setup.sh installs it)";
  }
  const std::string dir = CORRAL_BROWSER_DIR;
  if (!std::filesystem::exists(dir + "/node_modules/puppeteer-core")) {
    GTEST_SKIP() << "puppeteer-core not installed in " << dir;
  }
  LocalCluster c("browser-data", 2, 1);
  MakeDatasetSource(c.dir() + "/shared/cifar", 40, 50000);
  MakeDatasetSource(c.dir() + "/shared/mnist", 10, 1000);
  ASSERT_EQ(c.Corral({"datasets", "add", "cifar", "--source", c.dir() + "/shared/cifar"}).exit_code,
            0);
  ASSERT_EQ(c.Corral({"datasets", "add", "mnist", "--source", c.dir() + "/shared/mnist"}).exit_code,
            0);
  const std::string id = c.Submit({"--gpus", "1", "--dataset", "cifar", "--", "true"});
  std::string node;
  ASSERT_TRUE(WaitUntil(60000, [&] {
    auto j = nlohmann::json::parse(c.Corral({"show", id, "-o", "json"}).out, nullptr, false);
    if (!j.is_object() || j.value("state", "") != "succeeded") return false;
    node = j["runs"].back()["placement"][0].value("node", "");
    return true;
  }));
  ASSERT_TRUE(WaitUntil(30000, [&] {
    auto d = nlohmann::json::parse(c.Corral({"datasets", "show", "cifar", "-o", "json"}).out,
                                   nullptr, false);
    return d.is_object() && d["nodes"] == nlohmann::json::array({node});
  }));
  const char* shots = getenv("SCREENSHOT_DIR");
  auto r = RunCommand({"/usr/bin/node", dir + "/datasets_test.mjs"},
                      {{"CORRAL_ADDR", c.addr()},
                       {"CORRAL_TOKEN", c.token()},
                       {"WANT_NODE", node},
                       {"CHROMIUM", kChromium},
                       {"SCREENSHOT_DIR", shots ? shots : c.dir() + "/screenshots"},
                       {"HOME", c.dir()}});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err << "\n(cluster and screenshots in " << c.dir() << ")";
  std::cout << r.out;
}

// The owner opens their notebook from the dashboard and runs a cell in it; another user cannot.
TEST(Browser, ANotebookOpensFromMySessionsAndRunsACell) {
  if (access(kChromium, X_OK) != 0) {
    GTEST_SKIP()
        << "Chromium not installed (Debian package chromium; scripts/setup.sh installs it)";
  }
  const std::string dir = CORRAL_BROWSER_DIR;
  if (!std::filesystem::exists(dir + "/node_modules/puppeteer-core")) {
    GTEST_SKIP() << "puppeteer-core not installed in " << dir;
  }
  if (access("/usr/bin/jupyter-notebook", X_OK) != 0) {
    const char* ci = getenv("CI");
    if (ci != nullptr && std::string(ci) == "true") {
      FAIL() << "CI must run this: no /usr/bin/jupyter-notebook (scripts/setup-tests.sh)";
    }
    GTEST_SKIP() << "no /usr/bin/jupyter-notebook (Debian's jupyter-notebook)";
  }
  LocalCluster c("browser-nb", 1, 2);
  auto token_of = [&](const std::string& user) {
    auto r = c.Corral({"token", "create", "--user", user});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out.substr(0, r.out.find('\n'));
  };
  const std::string ana = token_of("ana");
  const std::string other = token_of("bob");
  std::map<std::string, std::string> env = {{"CORRAL_ADDR", c.addr()},
                                            {"CORRAL_TOKEN", ana},
                                            {"CORRAL_CONFIG", c.dir() + "/no-config.json"}};
  if (c.tls()) env["CORRAL_CA"] = c.ca_path();
  auto nb = RunCommand({CorralBin(), "notebook", "--gpus", "1"}, env);
  ASSERT_EQ(nb.exit_code, 0) << nb.out << nb.err;
  const std::string url = nb.out.substr(0, nb.out.find('\n'));
  const size_t at = url.find("/s/") + 3;
  const std::string id = url.substr(at, url.find('/', at) - at);
  auto show = nlohmann::json::parse(c.Corral({"show", id, "-o", "json"}).out, nullptr, false);
  const auto& job = show.contains("job") ? show["job"] : show;
  const int gpu = job["runs"].back()["placement"][0]["gpus"][0].get<int>();

  const char* shots = getenv("SCREENSHOT_DIR");
  auto r = RunCommand({"/usr/bin/node", dir + "/notebook_test.mjs"},
                      {{"CORRAL_ADDR", c.addr()},
                       {"CORRAL_USER_TOKEN", ana},
                       {"OTHER_TOKEN", other},
                       {"NOTEBOOK_ID", id},
                       {"WANT_OUTPUT", "CVD=" + std::to_string(gpu)},
                       {"CHROMIUM", kChromium},
                       {"SCREENSHOT_DIR", shots ? shots : c.dir() + "/screenshots"},
                       {"HOME", c.dir()}});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err << "\n(cluster and screenshots in " << c.dir() << ")";
  std::cout << r.out;
  c.Corral({"cancel", id});
}

}  // namespace
}  // namespace corral::testing
