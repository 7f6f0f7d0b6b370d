// A notebook's kernel activity (notebook_activity.h): the parser on Jupyter's answers, and the
// poller against a small HTTP server on real loopback answering as Jupyter does.
#include "agent/notebook_activity.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <map>
#include <mutex>
#include <thread>

namespace corral::agent {
namespace {

constexpr TimeMs kNow = 1794908800000;  // 2026-11-17T09:46:40Z

TEST(ParseIsoUtc, ReadsJupytersFormats) {
  EXPECT_EQ(*ParseIsoUtc("2026-11-17T09:46:40.250000Z"), kNow + 250);
  EXPECT_EQ(*ParseIsoUtc("2026-11-17T09:46:40+00:00"), kNow);
  EXPECT_EQ(*ParseIsoUtc("1970-01-01T00:00:01Z"), 1000);
  EXPECT_FALSE(ParseIsoUtc("yesterday").ok());
  EXPECT_FALSE(ParseIsoUtc("2026-13-17T09:46:40Z").ok());
  auto local = ParseIsoUtc("2026-11-17T09:46:40+02:00");
  ASSERT_FALSE(local.ok());
  EXPECT_NE(local.status().message().find("UTC"), std::string::npos);
}

TEST(LastActivity, BusyIsNowIdleIsItsLastActivity) {
  const std::string idle = R"([{"id":"a","execution_state":"idle",
      "last_activity":"2026-11-17T09:40:00.000000Z"},{"id":"b","execution_state":"idle",
      "last_activity":"2026-11-17T09:45:00.000000Z"}])";
  EXPECT_EQ(*LastActivity(idle, kNow), kNow - 100 * kSecond);
  const std::string busy = R"([{"id":"a","execution_state":"idle",
      "last_activity":"2026-11-17T09:40:00Z"},{"id":"b","execution_state":"busy",
      "last_activity":"2026-11-17T09:00:00Z"}])";
  EXPECT_EQ(*LastActivity(busy, kNow), kNow);
  // A kernel no client has talked to stays "starting": its last_activity is what counts.
  EXPECT_EQ(*LastActivity(R"([{"execution_state":"starting",
      "last_activity":"2026-11-17T09:40:00Z"}])",
                          kNow),
            kNow - 400 * kSecond);
  EXPECT_EQ(*LastActivity("[]", kNow), 0);
  // A time ahead of the agent's clock counts as now, never as the future.
  EXPECT_EQ(*LastActivity(R"([{"last_activity":"2030-01-01T00:00:00Z"}])", kNow), kNow);
}

TEST(LastActivity, MalformedAnswersAreErrorsNamingWhat) {
  EXPECT_FALSE(LastActivity("<html>login</html>", kNow).ok());
  EXPECT_FALSE(LastActivity(R"({"kernels":[]})", kNow).ok());
  auto bad = LastActivity(R"([{"execution_state":"idle","last_activity":"soon"}])", kNow);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("last_activity"), std::string::npos);
  EXPECT_FALSE(LastActivity(R"([{"last_activity":17}])", kNow).ok());
}

// Answers GET requests on a loopback port from a table of path -> (status, body), and checks
// Jupyter's token as the server would.
class FakeJupyter {
 public:
  explicit FakeJupyter(std::string token) : token_(std::move(token)) {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
    EXPECT_EQ(listen(fd_, 8), 0);
    getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }
  ~FakeJupyter() {
    stop_ = true;
    shutdown(fd_, SHUT_RDWR);
    thread_.join();
    close(fd_);
  }
  void Answer(const std::string& path, int status, const std::string& body) {
    std::lock_guard lock(mu_);
    answers_[path] = {status, body};
  }
  int32_t port() const { return port_; }
  int requests() const { return requests_; }

 private:
  void Serve() {
    while (!stop_) {
      int c = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) return;
      std::string req;
      char buf[1024];
      while (req.find("\r\n\r\n") == std::string::npos) {
        ssize_t n = recv(c, buf, sizeof(buf), 0);
        if (n <= 0) break;
        req.append(buf, static_cast<size_t>(n));
      }
      ++requests_;
      const std::string path = req.substr(4, req.find(' ', 4) - 4);
      std::pair<int, std::string> answer{404, "{}"};
      {
        std::lock_guard lock(mu_);
        if (auto it = answers_.find(path); it != answers_.end()) answer = it->second;
      }
      if (req.find("Authorization: token " + token_ + "\r\n") == std::string::npos) {
        answer = {403, "{}"};
      }
      const std::string out = "HTTP/1.0 " + std::to_string(answer.first) +
                              " X\r\nContent-Type: application/json\r\n\r\n" + answer.second;
      (void)send(c, out.data(), out.size(), MSG_NOSIGNAL);
      close(c);
    }
  }

  std::string token_;
  int fd_ = -1;
  int32_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> requests_{0};
  std::mutex mu_;
  std::map<std::string, std::pair<int, std::string>> answers_;
  std::thread thread_;
};

TEST(PollNotebookActivity, TakesTheLatestOfKernelsAndTerminals) {
  FakeJupyter jupyter("sekrit");
  jupyter.Answer("/s/7/api/kernels", 200,
                 R"([{"execution_state":"idle","last_activity":"2026-11-17T09:40:00Z"}])");
  jupyter.Answer("/s/7/api/terminals", 200,
                 R"([{"name":"1","last_activity":"2026-11-17T09:46:00Z"}])");
  NotebookServer server{jupyter.port(), "sekrit"};
  auto at = PollNotebookActivity(server, 7, kNow, 2000);
  ASSERT_TRUE(at.ok()) << at.status().message();
  EXPECT_EQ(*at, kNow - 40 * kSecond);

  jupyter.Answer("/s/7/api/kernels", 200,
                 R"([{"execution_state":"busy","last_activity":"2026-11-17T09:00:00Z"}])");
  EXPECT_EQ(*PollNotebookActivity(server, 7, kNow, 2000), kNow);

  NotebookServer wrong{jupyter.port(), "guess"};
  auto refused = PollNotebookActivity(wrong, 7, kNow, 2000);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("403"), std::string::npos);
}

TEST(UpdateNotebookActivity, PacesPollsAndKeepsWhatItSawThroughABadAnswer) {
  FakeJupyter jupyter("t");
  jupyter.Answer("/s/3/api/kernels", 200,
                 R"([{"execution_state":"idle","last_activity":"2026-11-17T09:46:30Z"}])");
  jupyter.Answer("/s/3/api/terminals", 200, "[]");
  NotebookServer server{jupyter.port(), "t"};
  NotebookActivity a;
  EXPECT_TRUE(UpdateNotebookActivity(&a, server, 3, kNow, 5000, 2000)) << "the first activity";
  EXPECT_EQ(a.active_at, kNow - 10 * kSecond);
  EXPECT_FALSE(a.busy);
  EXPECT_EQ(jupyter.requests(), 2);
  UpdateNotebookActivity(&a, server, 3, kNow + 1000, 5000, 2000);  // too soon: not asked
  EXPECT_EQ(jupyter.requests(), 2);
  // A cell starts: busy, and worth telling the head at once; still busy: nothing new.
  jupyter.Answer("/s/3/api/kernels", 200, R"([{"execution_state":"busy"}])");
  EXPECT_TRUE(UpdateNotebookActivity(&a, server, 3, kNow + 5000, 5000, 2000));
  EXPECT_TRUE(a.busy);
  EXPECT_EQ(a.active_at, kNow + 5000);
  EXPECT_FALSE(UpdateNotebookActivity(&a, server, 3, kNow + 10000, 5000, 2000));
  EXPECT_EQ(a.active_at, kNow + 10000);
  // It ends: idle since its last_activity, told at once too.
  jupyter.Answer("/s/3/api/kernels", 200,
                 R"([{"execution_state":"idle","last_activity":"2026-11-17T09:46:52Z"}])");
  EXPECT_TRUE(UpdateNotebookActivity(&a, server, 3, kNow + 15000, 5000, 2000));
  EXPECT_FALSE(a.busy);
  EXPECT_EQ(a.active_at, kNow + 12000);
  // Used again soon after: nothing urgent; used again after a quiet spell: the head hears now.
  jupyter.Answer("/s/3/api/kernels", 200,
                 R"([{"execution_state":"idle","last_activity":"2026-11-17T09:46:59Z"}])");
  EXPECT_FALSE(UpdateNotebookActivity(&a, server, 3, kNow + 20000, 5000, 2000));
  EXPECT_EQ(a.active_at, kNow + 19000);
  jupyter.Answer("/s/3/api/kernels", 200,
                 R"([{"execution_state":"idle","last_activity":"2026-11-17T09:47:19Z"}])");
  EXPECT_TRUE(UpdateNotebookActivity(&a, server, 3, kNow + 40000, 5000, 2000));
  EXPECT_EQ(a.active_at, kNow + 39000);
  EXPECT_EQ(jupyter.requests(), 12);
  a.active_at = kNow - 10 * kSecond;
  a.polled_at = 0;

  // Malformed: logged and ignored, what was seen stays.
  jupyter.Answer("/s/3/api/kernels", 200, "not json at all");
  EXPECT_FALSE(UpdateNotebookActivity(&a, server, 3, kNow + 6000, 5000, 2000));
  EXPECT_EQ(jupyter.requests(), 13);
  EXPECT_EQ(a.active_at, kNow - 10 * kSecond);
  EXPECT_EQ(a.polled_at, kNow + 6000);

  // A server that is gone: the same.
  NotebookServer gone{1, "t"};
  UpdateNotebookActivity(&a, gone, 3, kNow + 12000, 5000, 200);
  EXPECT_EQ(a.active_at, kNow - 10 * kSecond);
}

}  // namespace
}  // namespace corral::agent
