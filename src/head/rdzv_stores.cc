#include "head/rdzv_stores.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

extern char** environ;

namespace corral::head {
namespace {

// The store: a TCPStore server on every interface at PORT that waits for no worker (replicas
// come and go). It exits when the head's lease file (LEASE) has gone unrenewed for ORPHAN_S
// seconds, or, without one, when its parent is gone.
constexpr const char* kRendezvousStoreScript = R"(import os, sys, time
from datetime import timedelta
from torch.distributed import TCPStore
port, job, lease, orphan_s = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
parent = os.getppid()
store = TCPStore("0.0.0.0", port, is_master=True, wait_for_workers=False,
                 timeout=timedelta(seconds=60))
print(f"rendezvous store for job {job} on port {port}", flush=True)
def head_alive():
    if not lease:
        return os.getppid() == parent
    try:
        return time.time() - os.stat(lease).st_mtime < orphan_s
    except OSError:
        return False
while head_alive():
    time.sleep(1)
)";

// The argument vector of job's store on port, as its /proc/PID/cmdline reads.
std::vector<std::string> RdzvStoreArgs(const std::string& python, JobId job, int32_t port,
                                       const std::string& lease) {
  return {python,
          "-c",
          kRendezvousStoreScript,
          std::to_string(port),
          std::to_string(job),
          lease,
          std::to_string(kRendezvousOrphanS)};
}

// Whether pid is job's store on port (and not a process that reused a dead store's pid).
bool RdzvIsStoreProcess(pid_t pid, JobId job, int32_t port) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  const std::string cmdline = text.str();
  const std::string tail = std::string(kRendezvousStoreScript) + '\0' + std::to_string(port) +
                           '\0' + std::to_string(job) + '\0';
  return cmdline.find(tail) != std::string::npos;
}

}  // namespace

RendezvousStores::RendezvousStores(std::string python, std::string log_path, std::string dir)
    : python_(std::move(python)), log_path_(std::move(log_path)), dir_(std::move(dir)) {
  if (dir_.empty()) return;
  if (mkdir(dir_.c_str(), 0700) != 0 && errno != EEXIST) {
    spdlog::warn("rendezvous stores: cannot create {}: {}; they end with the head", dir_,
                 strerror(errno));
    dir_.clear();
    return;
  }
  Adopt();
}

RendezvousStores::~RendezvousStores() {
  if (!dir_.empty()) return;  // a head started again adopts them; else they exit by themselves
  while (!stores_.empty()) Stop(stores_.begin()->first);
}

std::string RendezvousStores::PidPath(JobId job) const {
  return dir_ + "/" + std::to_string(job) + ".pid";
}

std::string RendezvousStores::LeasePath() const { return dir_.empty() ? "" : dir_ + "/lease"; }

void RendezvousStores::Adopt() {
  DIR* d = opendir(dir_.c_str());
  if (d == nullptr) return;
  std::vector<std::string> names;
  while (const dirent* e = readdir(d)) names.emplace_back(e->d_name);
  closedir(d);
  for (const std::string& name : names) {
    char* end = nullptr;
    const JobId job = std::strtoull(name.c_str(), &end, 10);
    if (end == name.c_str() || std::string(end) != ".pid") continue;
    std::ifstream in(PidPath(job));
    Store s;
    if (in >> s.pid >> s.port && s.pid > 0 && RdzvIsStoreProcess(s.pid, job, s.port)) {
      spdlog::info("rendezvous store for job {} on port {} adopted (pid {})", job, s.port, s.pid);
      stores_[job] = s;
      ports_[job] = s.port;
    } else {
      unlink(PidPath(job).c_str());
    }
  }
}

void RendezvousStores::Reconcile(const std::map<JobId, int32_t>& want) {
  if (!dir_.empty()) {
    // The lease: the stores stay while a head renews it.
    const int fd = open(LeasePath().c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (fd >= 0) {
      (void)futimens(fd, nullptr);
      close(fd);
    }
  }
  for (auto it = stores_.begin(); it != stores_.end();) {
    const JobId job = (it++)->first;
    auto w = want.find(job);
    const Store& s = stores_.at(job);
    if (w == want.end() || w->second != s.port || !Alive(job, s)) Stop(job);
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
  // Nothing else of the head's: a store that outlives the head must not hold its listening
  // socket (a head started again could not bind it) nor its store's files.
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // A session of its own: a signal to the head's terminal or group does not reach it.
  if (!dir_.empty()) posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID);
  std::vector<std::string> args = RdzvStoreArgs(python_, job, port, LeasePath());
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, python_.c_str(), &actions, &attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    spdlog::warn("rendezvous store for job {} not started: {} ({})", job, strerror(rc), python_);
    return;
  }
  spdlog::info("rendezvous store for job {} on port {} (pid {})", job, port, pid);
  stores_[job] = Store{pid, port};
  ports_[job] = port;
  if (!dir_.empty()) std::ofstream(PidPath(job)) << pid << ' ' << port << '\n';
}

void RendezvousStores::Stop(JobId job) {
  auto it = stores_.find(job);
  if (it == stores_.end()) return;
  const Store s = it->second;
  stores_.erase(it);
  ports_.erase(job);
  if (!dir_.empty()) unlink(PidPath(job).c_str());
  if (s.pid <= 0) return;
  // It holds nothing worth a grace: the rendezvous of a run that is over. One adopted from an
  // earlier head is not our child (init reaps it), and may already be gone.
  if (RdzvIsStoreProcess(s.pid, job, s.port)) kill(s.pid, SIGKILL);
  int status = 0;
  (void)waitpid(s.pid, &status, 0);
}

bool RendezvousStores::Alive(JobId job, const Store& s) {
  int status = 0;
  const pid_t r = waitpid(s.pid, &status, WNOHANG);
  if (r == 0) return true;  // our child, running
  if (r < 0 && errno == ECHILD) return RdzvIsStoreProcess(s.pid, job, s.port);  // adopted
  return false;  // exited (reaped now)
}

}  // namespace corral::head
