// The rendezvous stores of elastic jobs (docs/elastic.md): one standalone torch TCPStore
// process per elastic job with a live run, on the head's host, so that torchrun's c10d
// rendezvous does not live on a GPU node whose loss would take the job down. Owned by the
// head's shell (head.cc), used on its state-machine thread only: each tick reconciles the
// processes with HeadCore::RendezvousWanted. A store whose process died is started again.
// Each process also exits by itself once the head is gone (it watches its parent).
#pragma once

#include <sys/types.h>

#include <map>
#include <string>

#include "core/job.h"

namespace corral::head {

class RendezvousStores {
 public:
  // `python`: the interpreter with torch (the jobs' own, e.g. /usr/bin/python3); `log_path`:
  // where the stores' output goes ("": /dev/null).
  RendezvousStores(std::string python, std::string log_path)
      : python_(std::move(python)), log_path_(std::move(log_path)) {}
  ~RendezvousStores();
  RendezvousStores(const RendezvousStores&) = delete;
  RendezvousStores& operator=(const RendezvousStores&) = delete;

  // Starts the stores `want` names (job -> port) that do not run, stops the others.
  void Reconcile(const std::map<JobId, int32_t>& want);
  // Jobs with a store process running now, and its port.
  const std::map<JobId, int32_t>& running() const { return ports_; }

 private:
  struct Store {
    pid_t pid = -1;
    int32_t port = 0;
  };
  void Start(JobId job, int32_t port);
  void Stop(JobId job);
  bool Alive(pid_t pid);

  std::string python_;
  std::string log_path_;
  std::map<JobId, Store> stores_;
  std::map<JobId, int32_t> ports_;
};

}  // namespace corral::head
