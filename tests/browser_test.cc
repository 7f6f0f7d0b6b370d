// The web dashboard in a real browser: a real head and agents on loopback (LocalCluster), and
// Debian's Chromium driven headless by puppeteer-core (tests/browser/dashboard_test.mjs). Skips
// with the reason where Chromium or the npm packages are not installed (scripts/setup.sh
// installs both).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

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

}  // namespace
}  // namespace corral::testing
