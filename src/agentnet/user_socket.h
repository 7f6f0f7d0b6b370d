// The agent's local socket for the Unix users of its node (`corral agent --unix-socket`), so
// that `corral` there needs no token, as on the head's host. The kernel names each caller
// (SO_PEERCRED, read by the HTTP server); the agent forwards the request to the leading head as
//   METHOD /v1/forwarded/UID/<the request's target>
// with this node's credential as the bearer (api/forwarded.h). The head names the uid and gives
// it its groups' roles, and takes the uid only from a node it knows now: the agent vouches for
// which local user is calling, never for what that user may do.
//
// Threads: the socket's HTTP I/O thread calls Handle, which only queues; `workers` threads send
// the queued requests to the head, each with a HeadClient of its own (they block for the
// head's long polls); SetCredential is called from the registering thread.
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/status.h"
#include "net/head_client.h"
#include "net/http.h"

namespace corral::agentnet {

// The target a request that came over the node's socket is forwarded to, or why it is not:
// one carrying a token (the socket's caller is its Unix user), one not under /v1/ (notebooks
// and services are served on the head's TCP address), an agent's own route or the forwarding
// route itself. REQUIRES: req.peer (the server set it). Pure.
Result<std::string> ForwardedTarget(const net::HttpRequest& req);

// The head's answer as the socket's answer: status, body, content type and the headers the
// CLI reads (X-Corral-*), without the hop-by-hop ones. An error reaching the head is a 502.
net::HttpResponse RelayedAnswer(const Result<net::HttpResponse>& from_head);

class UserForwarder {
 public:
  // REQUIRES: workers >= 1.
  explicit UserForwarder(std::vector<std::string> head_urls, int workers = 16,
                         size_t max_queued = 256);
  ~UserForwarder();  // joins the workers; requests still queued are answered 503
  UserForwarder(const UserForwarder&) = delete;
  UserForwarder& operator=(const UserForwarder&) = delete;

  // The credential the head issued this node (at each registration).
  void SetCredential(const std::string& credential);
  // A request from the socket: refused at once, or queued for a worker.
  void Handle(net::HttpRequest req, net::Responder respond);

 private:
  struct Queued {
    std::string target;
    net::HttpRequest req;
    net::Responder respond;
  };
  void Work();
  net::HttpResponse Forward(const Queued& q, std::unique_ptr<net::HeadClient>& client,
                            std::string& client_credential);

  const std::vector<std::string> head_urls_;
  const size_t max_queued_;
  std::mutex mu_;
  std::condition_variable wake_;
  std::string credential_;    // GUARDED_BY(mu_); empty until the node first registers
  std::deque<Queued> queue_;  // GUARDED_BY(mu_)
  bool stopping_ = false;     // GUARDED_BY(mu_)
  std::vector<std::thread> workers_;
};

}  // namespace corral::agentnet
