// A notebook's kernel activity (notebook_activity.h): the parser on Jupyter's answers, and the
// poller against a small HTTP server on real loopback answering as Jupyter does.
#include "agent/sessions/notebook_activity.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
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
    if (ws_ >= 0) close(ws_);
  }
  // Waits until a kernel's WebSocket is open (its path), then sends `frames` on it.
  void Push(const std::string& frames) {
    for (int i = 0; i < 500 && ws_ < 0; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    ASSERT_GE(ws_.load(), 0) << "no WebSocket was opened";
    ASSERT_EQ(send(ws_, frames.data(), frames.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(frames.size()));
    // Loopback delivers later under load: wait until the peer's stack has taken every byte.
    int unacked = 1;
    for (int i = 0; i < 500 && ioctl(ws_, SIOCOUTQ, &unacked) == 0 && unacked > 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    ASSERT_EQ(unacked, 0);
  }
  // The next message the client sent on the WebSocket, unmasked ("" after 5 s without one).
  std::string Receive() {
    std::string in;
    auto need = [&](size_t n) {
      char buf[4096];
      while (in.size() < n) {
        pollfd p{ws_, POLLIN, 0};
        if (poll(&p, 1, 5000) != 1) return false;
        ssize_t got = recv(ws_, buf, sizeof(buf), 0);
        if (got <= 0) return false;
        in.append(buf, static_cast<size_t>(got));
      }
      return true;
    };
    if (!need(2)) return "";
    size_t len = static_cast<uint8_t>(in[1]) & 0x7f, at = 2;
    if (len == 126) {
      if (!need(4)) return "";
      len = (size_t{static_cast<uint8_t>(in[2])} << 8) | static_cast<uint8_t>(in[3]);
      at = 4;
    }
    if (!need(at + 4 + len)) return "";
    std::string out = in.substr(at + 4, len);
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<char>(out[i] ^ in[at + i % 4]);
    return out;
  }
  std::string ws_path() {
    std::lock_guard lock(mu_);
    return ws_path_;
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
      const std::string path = req.substr(4, req.find(' ', 4) - 4);
      if (req.find("Upgrade: websocket\r\n") != std::string::npos &&
          req.find("Authorization: token " + token_ + "\r\n") != std::string::npos) {
        const std::string out =
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: "
            "Upgrade\r\n\r\n";
        (void)send(c, out.data(), out.size(), MSG_NOSIGNAL);
        {
          std::lock_guard lock(mu_);
          ws_path_ = path;
        }
        ws_ = c;  // kept open: the test pushes frames on it
        continue;
      }
      ++requests_;
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
  std::atomic<int> ws_{-1};
  std::string ws_path_;
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

// A server frame (unmasked), FIN as given.
std::string ServerFrame(uint8_t opcode, const std::string& payload, bool fin = true) {
  std::string f;
  f.push_back(static_cast<char>((fin ? 0x80 : 0) | opcode));
  if (payload.size() < 126) {
    f.push_back(static_cast<char>(payload.size()));
  } else if (payload.size() <= 0xffff) {
    f.push_back(static_cast<char>(126));
    f.push_back(static_cast<char>(payload.size() >> 8));
    f.push_back(static_cast<char>(payload.size() & 0xff));
  } else {
    f.push_back(static_cast<char>(127));
    for (int shift = 56; shift >= 0; shift -= 8) {
      f.push_back(static_cast<char>((static_cast<uint64_t>(payload.size()) >> shift) & 0xff));
    }
  }
  return f + payload;
}

// An IOPub status message as Jupyter's WebSocket carries it.
std::string StatusFrame(const std::string& state, const std::string& parent_type,
                        const std::string& parent_id) {
  return ServerFrame(0x1, R"({"channel":"iopub","header":{"msg_type":"status"},)"
                          R"("parent_header":{"msg_type":")" +
                              parent_type + R"(","msg_id":")" + parent_id +
                              R"("},"content":{"execution_state":")" + state + R"("}})");
}

// What the classic notebook server's own execution_state gets wrong: a kernel_info_request on the
// control channel (the server's nudge on each new WebSocket) answered after a cell started says
// "idle" while the cell runs. The cell runs from its execute_request's busy to its idle.
TEST(KernelStatusTracker, ACellRunsFromItsBusyToItsIdleWhateverOtherRequestsSay) {
  KernelStatusTracker t;
  ASSERT_TRUE(t.Feed(StatusFrame("busy", "execute_request", "cell-1")).ok());
  EXPECT_TRUE(t.running_cell());
  ASSERT_TRUE(t.Feed(StatusFrame("busy", "kernel_info_request", "nudge") +
                     StatusFrame("idle", "kernel_info_request", "nudge"))
                  .ok());
  EXPECT_TRUE(t.running_cell()) << "the nudge's idle is not the cell's";
  // Output, split across reads and frames, changes nothing; a ping is answered with a pong.
  std::string out =
      ServerFrame(0x1, R"({"channel":"iopub","header":{"msg_type":"stream"},)", false) +
      ServerFrame(0x0, R"("content":{"text":"x"}})");
  ASSERT_TRUE(t.Feed(out.substr(0, 7)).ok());
  ASSERT_TRUE(t.Feed(out.substr(7)).ok());
  auto pong = t.Feed(ServerFrame(0x9, "hi"));
  ASSERT_TRUE(pong.ok());
  ASSERT_EQ(pong->size(), 2u + 4u + 2u);
  EXPECT_EQ(static_cast<uint8_t>((*pong)[0]), 0x8A);
  EXPECT_EQ(static_cast<uint8_t>((*pong)[1]), 0x82) << "masked, 2 bytes";
  // A message too large to be a status is skipped as it comes, and what follows still counts.
  const std::string big(2 << 20, 'x');
  const std::string frame = ServerFrame(0x1, big);
  ASSERT_TRUE(t.Feed(frame.substr(0, 1000)).ok());
  ASSERT_TRUE(t.Feed(frame.substr(1000) + StatusFrame("idle", "execute_request", "cell-1")).ok());
  EXPECT_FALSE(t.running_cell());
  // Our own shell request waits behind a cell that started before we looked: busy until answered.
  t.AwaitAnswer("probe");
  EXPECT_TRUE(t.running_cell());
  ASSERT_TRUE(t.Feed(StatusFrame("busy", "kernel_info_request", "probe")).ok());
  EXPECT_TRUE(t.running_cell());
  ASSERT_TRUE(t.Feed(StatusFrame("idle", "kernel_info_request", "probe")).ok());
  EXPECT_FALSE(t.running_cell());
  // A kernel restarted runs nothing.
  ASSERT_TRUE(t.Feed(StatusFrame("busy", "execute_request", "cell-2")).ok());
  t.OnMessage(R"({"channel":"iopub","header":{"msg_type":"status"},"parent_header":{},)"
              R"("content":{"execution_state":"restarting"}})");
  EXPECT_FALSE(t.running_cell());
  // Not a WebSocket stream from a server: an error.
  EXPECT_FALSE(KernelStatusTracker().Feed(ClientFrame(0x1, "{}", 7)).ok());
}

// The poll: Jupyter's /api/kernels says idle while the cell runs (its nudge's idle came last);
// the kernel's WebSocket, followed from the poll that first listed the kernel, says otherwise.
TEST(UpdateNotebookActivity, ACellSeenRunningOnItsWebSocketIsBusyWhateverJupyterSays) {
  FakeJupyter jupyter("t");
  jupyter.Answer("/s/4/api/kernels", 200,
                 R"([{"id":"0a1b-2c","execution_state":"starting",)"
                 R"("last_activity":"2026-11-17T09:46:30Z"}])");
  jupyter.Answer("/s/4/api/terminals", 200, "[]");
  NotebookServer server{jupyter.port(), "t"};
  NotebookActivity a;
  UpdateNotebookActivity(&a, server, 4, kNow, 1000, 2000);  // connects
  jupyter.Push(StatusFrame("busy", "execute_request", "cell") +
               StatusFrame("busy", "kernel_info_request", "nudge") +
               StatusFrame("idle", "kernel_info_request", "nudge"));
  EXPECT_EQ(jupyter.ws_path(), "/s/4/api/kernels/0a1b-2c/channels");
  jupyter.Answer("/s/4/api/kernels", 200,
                 R"([{"id":"0a1b-2c","execution_state":"idle",)"
                 R"("last_activity":"2026-11-17T09:46:31Z"}])");
  UpdateNotebookActivity(&a, server, 4, kNow + 2000, 1000, 2000);  // (busy since it connected)
  EXPECT_TRUE(a.busy) << "the cell runs";
  EXPECT_EQ(a.active_at, kNow + 2000);
  // Once connected, the agent asked the kernel on its shell channel, behind any running cell.
  auto probe = nlohmann::json::parse(jupyter.Receive(), nullptr, false);
  ASSERT_TRUE(probe.is_object());
  EXPECT_EQ(probe.value("channel", ""), "shell");
  EXPECT_EQ(probe["header"].value("msg_type", ""), "kernel_info_request");
  const std::string probe_id = probe["header"].value("msg_id", "");
  EXPECT_FALSE(UpdateNotebookActivity(&a, server, 4, kNow + 4000, 1000, 2000));
  EXPECT_TRUE(a.busy);
  // The cell ends: idle since Jupyter's last_activity, told at once.
  jupyter.Push(StatusFrame("idle", "execute_request", "cell"));
  EXPECT_FALSE(UpdateNotebookActivity(&a, server, 4, kNow + 5000, 1000, 2000));
  EXPECT_TRUE(a.busy) << "its shell request is not answered yet";
  jupyter.Push(StatusFrame("busy", "kernel_info_request", probe_id) +
               StatusFrame("idle", "kernel_info_request", probe_id));
  jupyter.Answer("/s/4/api/kernels", 200,
                 R"([{"id":"0a1b-2c","execution_state":"idle",)"
                 R"("last_activity":"2026-11-17T09:46:45Z"}])");
  EXPECT_TRUE(UpdateNotebookActivity(&a, server, 4, kNow + 7000, 1000, 2000));
  EXPECT_FALSE(a.busy);
  EXPECT_EQ(a.active_at, kNow + 5000);
  // The kernel is gone: so is its connection.
  jupyter.Answer("/s/4/api/kernels", 200, "[]");
  UpdateNotebookActivity(&a, server, 4, kNow + 9000, 1000, 2000);
  EXPECT_TRUE(a.kernels->empty());
}

}  // namespace
}  // namespace corral::agent
