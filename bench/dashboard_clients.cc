// Holds N dashboard clients on a head until SIGINT/SIGTERM (or --seconds): each follows
// GET /v1/events as server-sent events from the revision it last saw, as the page does, and
// with --refetch-ms also reads what the page reads after a change (the active jobs and the
// nodes), at most that often. For bench/dashboard_load.sh.
//
//   corral_dashboard_clients --addr http://127.0.0.1:7070 --token T --clients 100
//                            [--refetch-ms 0] [--seconds 0]
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "net/http_client.h"

using namespace std::chrono_literals;

namespace {

std::atomic<bool> stop{false};

std::string Arg(int argc, char** argv, const std::string& name, const std::string& def) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (argv[i] == name) return argv[i + 1];
  }
  return def;
}

// The last "id: N" line of an SSE body, or `since` when there is none.
uint64_t LastId(const std::string& body, uint64_t since, int64_t* events) {
  uint64_t last = since;
  for (size_t pos = 0; pos < body.size();) {
    size_t eol = body.find('\n', pos);
    if (eol == std::string::npos) eol = body.size();
    if (body.compare(pos, 4, "id: ") == 0) {
      last = std::stoull(body.substr(pos + 4, eol - pos - 4));
      ++*events;
    }
    pos = eol + 1;
  }
  return last;
}

}  // namespace

int main(int argc, char** argv) {
  std::string addr = Arg(argc, argv, "--addr", "http://127.0.0.1:7070");
  std::string token = Arg(argc, argv, "--token", "");
  int clients = std::stoi(Arg(argc, argv, "--clients", "100"));
  int refetch_ms = std::stoi(Arg(argc, argv, "--refetch-ms", "0"));
  int seconds = std::stoi(Arg(argc, argv, "--seconds", "0"));
  if (token.empty()) {
    std::fprintf(stderr, "corral_dashboard_clients: --token is required\n");
    return 2;
  }
  std::signal(SIGINT, [](int) { stop = true; });
  std::signal(SIGTERM, [](int) { stop = true; });
  std::atomic<int64_t> events{0}, answers{0}, refetches{0}, errors{0};
  std::atomic<int> connected{0};
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&] {
      corral::net::HttpClient stream(addr, token);
      corral::net::HttpClient api(addr, token);
      // Start where the page does: the revision a first read reflects.
      auto first = api.Get("/v1/queues", 10s);
      if (!first.ok() || first->status != 200) {
        ++errors;
        return;
      }
      uint64_t rev = std::stoull(first->headers["x-corral-revision"]);
      ++connected;
      auto last_refetch = std::chrono::steady_clock::now() - 1h;
      while (!stop) {
        // The head's default wait (25 s), as a page gets.
        auto r = stream.Request("GET", "/v1/events?since=" + std::to_string(rev), "", 60s,
                                {{"Accept", "text/event-stream"}});
        if (!r.ok() || r->status != 200) {
          ++errors;
          std::this_thread::sleep_for(250ms);
          continue;
        }
        ++answers;
        int64_t n = 0;
        rev = LastId(r->body, rev, &n);
        events += n;
        if (n > 0 && refetch_ms > 0 &&
            std::chrono::steady_clock::now() - last_refetch >=
                std::chrono::milliseconds(refetch_ms)) {
          last_refetch = std::chrono::steady_clock::now();
          for (const char* path :
               {"/v1/jobs?state=pending,scheduled,running&limit=100000", "/v1/nodes"}) {
            auto page = api.Get(path, 10s);
            if (!page.ok() || page->status != 200) ++errors;
          }
          ++refetches;
        }
      }
    });
  }
  auto t0 = std::chrono::steady_clock::now();
  while (!stop &&
         (seconds <= 0 || std::chrono::steady_clock::now() - t0 < std::chrono::seconds(seconds))) {
    std::this_thread::sleep_for(100ms);
  }
  stop = true;
  std::printf("%d clients connected; %lld answers, %lld events, %lld refetches, %lld errors\n",
              connected.load(), static_cast<long long>(answers.load()),
              static_cast<long long>(events.load()), static_cast<long long>(refetches.load()),
              static_cast<long long>(errors.load()));
  std::fflush(stdout);
  // Clients may sit in a 25 s wait: leave without joining them.
  std::_Exit(0);
}
