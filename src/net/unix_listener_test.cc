// HttpServer::ListenUnix: the peer's credentials come from the kernel, only on the Unix
// listener, and HttpClient reaches it with a unix:// URL.
#include <grp.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "net/http_client.h"
#include "net/http_server.h"

namespace corral::net {
namespace {

using namespace std::chrono_literals;

// Answers {"peer": null} or {"peer": {"uid","gid","pid"}, "remote": ...}.
HttpServer PeerEchoServer() {
  return HttpServer([](HttpRequest req, Responder respond) {
    nlohmann::json j{{"remote", req.remote}, {"peer", nullptr}};
    if (req.peer)
      j["peer"] = {{"uid", req.peer->uid}, {"gid", req.peer->gid}, {"pid", req.peer->pid}};
    respond(HttpResponse{.body = j.dump()});
  });
}

class UnixListenerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/corral-unix-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    ::chmod(dir_.c_str(), 0755);
    path_ = dir_ + "/corral.sock";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_, path_;
};

TEST_F(UnixListenerTest, ARequestCarriesThePeersCredentialsFromTheKernel) {
  HttpServer server = PeerEchoServer();
  ASSERT_TRUE(server.ListenUnix(path_).ok());
  auto port = server.Listen("127.0.0.1", 0);
  ASSERT_TRUE(port.ok());
  server.Start();
  struct stat st {};
  ASSERT_EQ(::stat(path_.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0666u);  // every local user may connect

  HttpClient local("unix://" + path_, "");
  auto r = local.Get("/anything", 5s);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  auto j = nlohmann::json::parse(r->body);
  EXPECT_EQ(j["peer"]["uid"], ::getuid());
  EXPECT_EQ(j["peer"]["gid"], ::getgid());
  EXPECT_EQ(j["peer"]["pid"], ::getpid());
  EXPECT_EQ(j["remote"], "local uid " + std::to_string(::getuid()));
  // Keep-alive works over the socket as over TCP.
  ASSERT_TRUE(local.Get("/again", 5s).ok());
  EXPECT_EQ(local.connections_opened(), 1);

  // Over TCP there is no peer, whatever the request's headers claim.
  HttpClient tcp("http://127.0.0.1:" + std::to_string(*port), "");
  auto t =
      tcp.Request("GET", "/x", "", 5s, {{"x-corral-peer-uid", "0"}, {"x-remote-user", "root"}});
  ASSERT_TRUE(t.ok());
  EXPECT_TRUE(nlohmann::json::parse(t->body)["peer"].is_null());

  server.Stop();
  EXPECT_FALSE(std::filesystem::exists(path_)) << "Stop removes the socket";
}

TEST_F(UnixListenerTest, AnotherUsersProcessIsNamedByItsOwnUid) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to connect as another uid";
  HttpServer server = PeerEchoServer();
  ASSERT_TRUE(server.ListenUnix(path_).ok());
  server.Start();
  const std::string out = dir_ + "/answer";
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // uid 65534 (nobody), which may reach the socket only because it is 0666 in a 0755 dir.
    if (::setgroups(0, nullptr) != 0 || ::setresgid(65534, 65534, 65534) != 0 ||
        ::setresuid(65534, 65534, 65534) != 0) {
      ::_exit(10);
    }
    HttpClient c("unix://" + path_, "");
    auto r = c.Get("/who", 5s);
    if (!r.ok()) ::_exit(11);
    ::_exit(nlohmann::json::parse(r->body)["peer"]["uid"] == 65534 ? 0 : 12);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "10: cannot drop root; 11: no answer; 12: wrong uid";
  server.Stop();
}

TEST_F(UnixListenerTest, AStaleSocketIsReplacedALiveOneOrAFileRefused) {
  {
    // A socket bound and abandoned: its file stays, nobody answers.
    int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path_.c_str());
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    ::close(fd);
  }
  HttpServer first = PeerEchoServer();
  ASSERT_TRUE(first.ListenUnix(path_).ok());
  first.Start();
  HttpServer second = PeerEchoServer();
  Status busy = second.ListenUnix(path_);
  EXPECT_EQ(busy.code(), ErrorCode::kUnavailable);
  EXPECT_NE(busy.message().find("another process serves it"), std::string::npos) << busy.message();
  ASSERT_TRUE(HttpClient("unix://" + path_, "").Get("/", 5s).ok()) << "the first still serves";
  first.Stop();

  const std::string file = dir_ + "/not-a-socket";
  std::ofstream(file) << "data";
  Status refused = PeerEchoServer().ListenUnix(file);
  EXPECT_EQ(refused.code(), ErrorCode::kFailedPrecondition);
  EXPECT_TRUE(std::filesystem::exists(file)) << "a file that is not a socket is left alone";
}

TEST(UnixClientUrl, ABadUnixUrlIsRefusedWithTheReason) {
  auto r = HttpClient("unix://relative.sock", "").Get("/", 1s);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("unix:///PATH"), std::string::npos) << r.status().message();
  auto missing = HttpClient("unix:///nonexistent/corral.sock", "").Get("/", 1s);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), ErrorCode::kUnavailable);
}

}  // namespace
}  // namespace corral::net
