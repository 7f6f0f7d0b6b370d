// The agent's side of `corral exec` (docs/interactive.md): commands run inside a running job,
// their input and output relayed over HTTP. Only the head calls it, on behalf of a user it has
// authorised for that job: every request carries a relay grant (relay_auth.h) the head signed
// for this node and the session's run; the head proxies the user's requests.
//
//   POST   /v1/runs/RUN_ID/exec?replica=R   {"command":[..],"pty":b,"rows":n,"cols":n,"env":{}}
//          -> 201 {"session":"ID"}
//   POST   /v1/exec/ID/input?offset=N[&eof=1]   raw bytes -> {"offset":N}
//   GET    /v1/exec/ID/output?stream=stdout|stderr&offset=N&wait_ms=M
//          -> the bytes (held up to M ms while there are none), X-Corral-Next-Offset, and once
//             the stream is over and the command has exited, X-Corral-Exit-Code
//   POST   /v1/exec/ID/resize?rows=R&cols=C
//   POST   /v1/exec/ID/signal?signal=N
//   DELETE /v1/exec/ID                       ends it (SIGHUP, then SIGKILL)
//
// A session nobody has asked anything of for `abandon_after_ms` is ended (the client is gone:
// its output poll comes back at least every few seconds); one whose command has exited and
// whose output has been read is forgotten a few seconds later.
#pragma once

#include <utility>  // before Boost.Asio (DESIGN §13)

#include <boost/asio/thread_pool.hpp>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "agent/sessions/container_exec.h"
#include "agent/sessions/exec_session.h"
#include "agentnet/relay_auth.h"
#include "net/http.h"

namespace corral::agentnet {

class ExecServer {
 public:
  // `target`: where a command run inside a running replica of this node goes (its main
  // process; its container, where it has one: the command then runs in it, container_exec.h).
  using TargetLookup =
      std::function<Result<agent::ExecTarget>(const std::string& run_id, int32_t replica)>;
  // `auth` outlives the server.
  ExecServer(const RelayAuth* auth, TargetLookup target, int64_t abandon_after_ms = 60000);
  ~ExecServer();  // ends every session
  ExecServer(const ExecServer&) = delete;
  ExecServer& operator=(const ExecServer&) = delete;

  // Whether `req` is one of the paths above.
  static bool Serves(const net::HttpRequest& req);
  void Handle(net::HttpRequest req, net::Responder respond);
  size_t SessionCount();

 private:
  struct Entry {
    std::unique_ptr<agent::ContainerExec> container;  // its files outlive the session
    std::unique_ptr<agent::ExecSession> session;
    int64_t last_request_ms = 0;
    std::string run_id;  // the run it was opened in: each later request's grant must name it
  };
  void Open(const net::HttpRequest& req, const std::string& run_id, net::Responder respond);
  std::shared_ptr<Entry> Find(const std::string& id);
  // The grant of a request for session `id`: refused, or the session (null: no such session).
  std::optional<net::HttpResponse> Refuse(const net::HttpRequest& req, const std::string& id);
  void ReapLoop();

  const RelayAuth* const auth_;
  const TargetLookup target_;
  const int64_t abandon_after_ms_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::map<std::string, std::shared_ptr<Entry>> sessions_;
  boost::asio::thread_pool pool_{2};  // starts commands (forks, reads /proc) off the I/O thread
  std::thread reaper_;
};

}  // namespace corral::agentnet
