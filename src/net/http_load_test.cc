// Thousands of held requests on a 2-thread HttpServer (DESIGN §7: every agent keeps a
// long-poll open). Raw async clients on one thread of the test's own.
#include <utility>  // before Boost.Asio (Boost 1.74 awaitable.hpp)

#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <atomic>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "net/http.h"
#include "net/http_server.h"

namespace corral::net {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using boost::system::error_code;
using namespace std::chrono_literals;

int ThreadCount() {
  int n = 0;
  DIR* d = ::opendir("/proc/self/task");
  if (d == nullptr) return -1;
  while (const dirent* e = ::readdir(d)) {
    if (e->d_name[0] != '.') ++n;
  }
  ::closedir(d);
  return n;
}

// The thread count once it settles at `want`, or what it is after 2 s. A joined thread can
// still be listed for a moment: the kernel wakes pthread_join (clearing the thread's id)
// before it removes the thread from /proc/self/task.
int ThreadCountSettledAt(int want) {
  for (int i = 0; i < 200 && ThreadCount() != want; ++i) std::this_thread::sleep_for(10ms);
  return ThreadCount();
}

// Raises the soft fd limit to what `need` requires (both ends of every connection live
// in this process); returns false when the hard limit does not allow it.
bool EnsureFdLimit(rlim_t need) {
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0) return false;
  if (rl.rlim_cur >= need) return true;
  if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need) return false;
  rl.rlim_cur = need;
  return ::setrlimit(RLIMIT_NOFILE, &rl) == 0;
}

// One raw client connection: connect, send one request, read one response to EOF of
// its body (Content-Length), record the body.
struct RawClient : std::enable_shared_from_this<RawClient> {
  RawClient(asio::io_context& ioc, int id) : socket(ioc), id(id) {}
  tcp::socket socket;
  int id;
  std::string request;
  asio::streambuf buf;
  std::string response;
  bool done = false;

  void Start(const tcp::endpoint& ep, std::atomic<int>* sent) {
    request = "GET /hold?id=" + std::to_string(id) + " HTTP/1.1\r\nHost: x\r\n\r\n";
    socket.async_connect(ep, [self = shared_from_this(), sent](error_code ec) {
      if (ec) return;
      asio::async_write(self->socket, asio::buffer(self->request),
                        [self, sent](error_code ec2, size_t) {
                          if (ec2) return;
                          ++*sent;
                          self->ReadHeader();
                        });
    });
  }
  void ReadHeader() {
    asio::async_read_until(
        socket, buf, "\r\n\r\n", [self = shared_from_this()](error_code ec, size_t n) {
          if (ec) return;
          std::string head(asio::buffers_begin(self->buf.data()),
                           asio::buffers_begin(self->buf.data()) + n);
          self->buf.consume(n);
          const auto pos = head.find("Content-Length: ");
          if (head.rfind("HTTP/1.1 200", 0) != 0 || pos == std::string::npos) return;
          const size_t len = std::stoul(head.substr(pos + 16));
          const size_t have = self->buf.size();
          asio::async_read(self->socket, self->buf,
                           asio::transfer_exactly(len > have ? len - have : 0),
                           [self, len](error_code ec2, size_t) {
                             if (ec2) return;
                             std::string body(asio::buffers_begin(self->buf.data()),
                                              asio::buffers_begin(self->buf.data()) + len);
                             self->response = body;
                             self->done = true;
                             error_code ignored;
                             self->socket.close(ignored);
                           });
        });
  }
};

TEST(HttpLoadTest, TwoThousandHeldRequestsOnTwoIoThreads) {
  constexpr int kConns = 2000;
  constexpr int kIoThreads = 2;
  ASSERT_TRUE(EnsureFdLimit(2 * kConns + 256)) << "RLIMIT_NOFILE hard limit too low";

  std::mutex mu;
  std::vector<std::pair<int, Responder>> held;  // GUARDED_BY(mu)
  // A sanitizer runtime may start a helper thread with the first thread created: let it
  // start before the baseline is taken.
  std::thread([] {}).join();
  const int threads_before = ThreadCount();
  HttpServer server(
      [&](HttpRequest req, Responder respond) {
        std::lock_guard<std::mutex> lock(mu);
        held.emplace_back(std::stoi(req.query.at("id")), std::move(respond));
      },
      kIoThreads);
  auto port = server.Listen("127.0.0.1", 0);
  ASSERT_TRUE(port.ok()) << port.status().ToString();
  server.Start();

  asio::io_context client_ioc;
  const tcp::endpoint ep(asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(*port));
  std::vector<std::shared_ptr<RawClient>> clients;
  std::atomic<int> sent{0};
  for (int i = 0; i < kConns; ++i) {
    clients.push_back(std::make_shared<RawClient>(client_ioc, i));
    clients.back()->Start(ep, &sent);
  }
  std::thread client_thread([&] { client_ioc.run(); });

  const auto deadline = std::chrono::steady_clock::now() + 10s;
  auto held_count = [&] {
    std::lock_guard<std::mutex> lock(mu);
    return held.size();
  };
  while (held_count() < static_cast<size_t>(kConns) &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
  }
  ASSERT_EQ(held_count(), static_cast<size_t>(kConns)) << "sent " << sent.load();
  EXPECT_EQ(server.ConnectionCount(), static_cast<size_t>(kConns));
  // The held requests cost no threads: this one, the server's pool and the client's.
  EXPECT_EQ(ThreadCount(), threads_before + kIoThreads + 1);

  // Answer them all from this (non-I/O) thread, each with its own id.
  std::vector<std::pair<int, Responder>> to_answer;
  {
    std::lock_guard<std::mutex> lock(mu);
    to_answer = std::move(held);
  }
  for (auto& [id, respond] : to_answer) {
    HttpResponse r;
    r.body = "{\"id\":" + std::to_string(id) + "}";
    respond(std::move(r));
  }
  to_answer.clear();
  client_thread.join();  // returns once every client has read its answer (or failed)

  int answered = 0;
  for (const auto& c : clients) {
    if (c->done && c->response == "{\"id\":" + std::to_string(c->id) + "}") ++answered;
  }
  EXPECT_EQ(answered, kConns);
  EXPECT_EQ(ThreadCountSettledAt(threads_before + kIoThreads), threads_before + kIoThreads);
  server.Stop();
  EXPECT_EQ(ThreadCountSettledAt(threads_before), threads_before);
}

}  // namespace
}  // namespace corral::net
