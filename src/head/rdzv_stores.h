// The rendezvous stores of elastic jobs (docs/elastic.md): one standalone torch TCPStore
// process per elastic job with a live run, on the head's host, so that torchrun's c10d
// rendezvous does not live on a GPU node whose loss would take the job down. Owned by the
// head's shell (head.cc), used on its state-machine thread only: each tick reconciles the
// processes with HeadCore::RendezvousWanted. A store whose process died is started again.
//
// A store outlives a restart of the head: torchrun's agents keep one connection to it and fail
// when it closes, so a store that went with the head would take every elastic job with it.
// With a directory (the head's STATE/rdzv), each store's pid is kept there (JOB.pid) and the
// head renews a lease file there at every tick; a head started again on the same state adopts
// the stores it finds alive, and a store exits by itself once the lease has gone unrenewed for
// kRendezvousOrphanS (no head came back). Without a directory a store exits with its parent.
#pragma once

#include <sys/types.h>

#include <map>
#include <string>

#include "core/job.h"

namespace corral::head {

// How long a store waits for a head to renew its lease before it exits.
constexpr int kRendezvousOrphanS = 60;

class RendezvousStores {
 public:
  // `python`: the interpreter with torch (the jobs' own, e.g. /usr/bin/python3); `log_path`:
  // where the stores' output goes ("": /dev/null); `dir`: where their pids and the head's lease
  // are kept ("": the stores end with this process). Adopts the live stores `dir` names.
  RendezvousStores(std::string python, std::string log_path, std::string dir = "");
  // Leaves the stores running where they have a directory (a restarted head adopts them).
  ~RendezvousStores();
  RendezvousStores(const RendezvousStores&) = delete;
  RendezvousStores& operator=(const RendezvousStores&) = delete;

  // Starts the stores `want` names (job -> port) that do not run, stops the others, and renews
  // the lease.
  void Reconcile(const std::map<JobId, int32_t>& want);
  // Jobs with a store process running now, and its port.
  const std::map<JobId, int32_t>& running() const { return ports_; }

 private:
  struct Store {
    pid_t pid = -1;
    int32_t port = 0;
  };
  void Adopt();
  void Start(JobId job, int32_t port);
  void Stop(JobId job);
  bool Alive(JobId job, const Store& s);
  std::string PidPath(JobId job) const;
  std::string LeasePath() const;

  std::string python_;
  std::string log_path_;
  std::string dir_;
  std::map<JobId, Store> stores_;
  std::map<JobId, int32_t> ports_;
};

}  // namespace corral::head
