#include "head/rdzv_stores.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <spdlog/spdlog.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <vector>

extern char** environ;

namespace corral::head {
namespace {

// The store: a TCPStore server on every interface at PORT that outlives no head (it exits when
// its parent, the head, is gone) and waits for no worker (replicas come and go).
constexpr const char* kRendezvousStoreScript = R"(import os, sys, time
from datetime import timedelta
from torch.distributed import TCPStore
parent = os.getppid()
store = TCPStore("0.0.0.0", int(sys.argv[1]), is_master=True, wait_for_workers=False,
                 timeout=timedelta(seconds=60))
print(f"rendezvous store for job {sys.argv[2]} on port {sys.argv[1]}", flush=True)
while os.getppid() == parent:
    time.sleep(1)
)";

}  // namespace

RendezvousStores::~RendezvousStores() {
  while (!stores_.empty()) Stop(stores_.begin()->first);
}

void RendezvousStores::Reconcile(const std::map<JobId, int32_t>& want) {
  for (auto it = stores_.begin(); it != stores_.end();) {
    const JobId job = (it++)->first;
    auto w = want.find(job);
    if (w == want.end() || w->second != stores_.at(job).port || !Alive(stores_.at(job).pid)) {
      Stop(job);
    }
  }
  for (const auto& [job, port] : want) {
    if (!stores_.count(job)) Start(job, port);
  }
}

void RendezvousStores::Start(JobId job, int32_t port) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  const std::string log = log_path_.empty() ? "/dev/null" : log_path_;
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  std::vector<std::string> args = {python_, "-c", kRendezvousStoreScript, std::to_string(port),
                                   std::to_string(job)};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, python_.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    spdlog::warn("rendezvous store for job {} not started: {} ({})", job, strerror(rc), python_);
    return;
  }
  spdlog::info("rendezvous store for job {} on port {} (pid {})", job, port, pid);
  stores_[job] = Store{pid, port};
  ports_[job] = port;
}

void RendezvousStores::Stop(JobId job) {
  auto it = stores_.find(job);
  if (it == stores_.end()) return;
  const pid_t pid = it->second.pid;
  stores_.erase(it);
  ports_.erase(job);
  if (pid <= 0) return;
  kill(pid, SIGKILL);  // it holds nothing worth a grace: the rendezvous of a run that is over
  int status = 0;
  waitpid(pid, &status, 0);
}

bool RendezvousStores::Alive(pid_t pid) {
  int status = 0;
  return pid > 0 && waitpid(pid, &status, WNOHANG) == 0;
}

}  // namespace corral::head
