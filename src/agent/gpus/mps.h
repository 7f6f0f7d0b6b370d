// MPS isolation for shares of a GPU (docs/gpu-sharing.md): where nvidia-cuda-mps-control is
// installed, the agent runs one MPS control daemon per owner per GPU, so that an owner's
// shares of a GPU are clients of their own server (MPS serves one Unix user per server), each
// with its CUDA_MPS_PINNED_DEVICE_MEM_LIMIT and CUDA_MPS_ACTIVE_THREAD_PERCENTAGE (from the
// head). The scheduler never puts MPS shares of two owners on one GPU.
//
//   STATE/mps/u<uid>-gpu<G>/pipe, /log   the daemon's pipe and log directories (the owner's)
//   start   `nvidia-cuda-mps-control -d` as the owner, with CUDA_VISIBLE_DEVICES=G and
//           CUDA_MPS_PIPE_DIRECTORY / CUDA_MPS_LOG_DIRECTORY (the same go to its clients)
//   stop    `echo quit | nvidia-cuda-mps-control` with the same, when its last run has ended
//   STATE/mps/u<uid>-gpu<G>/runs   the runs that use the daemon ("gid N", then "run R" lines),
//           rewritten on every change, so that an agent that restarts (its runs go on) still
//           tells the daemon to quit after the last of them ends
#pragma once

#include <utility>

#include <sys/types.h>

#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "core/status.h"

namespace corral::agent {

// An owner's MPS server for one GPU, as its clients find it (share_contract.h's variables).
struct MpsClient {
  std::string pipe_dir;
  std::string log_dir;
};

class MpsDaemons {
 public:
  // `control`: the nvidia-cuda-mps-control executable; `dir`: where the daemons' directories
  // go. `as_owner`: daemons run as the runs' owners (the agent is root), else as the agent.
  // Takes over the daemons an earlier agent recorded in `dir` with the runs that use them.
  MpsDaemons(std::string control, std::string dir, bool as_owner);

  // The runs that use the daemon of (uid, gpu), as known now (for tests and the agent's log).
  std::set<std::string> RunsOf(uid_t uid, int32_t gpu);

  // The daemon of (uid, gpu), started if none runs, now used by `run` as well. Returns where
  // its clients find it. Thread-safe.
  Result<MpsClient> Acquire(const std::string& run, uid_t uid, gid_t gid, int32_t gpu);
  // `run` has ended: a daemon no run uses any more is told to quit. Thread-safe.
  void Release(const std::string& run);

  // nvidia-cuda-mps-control on PATH's usual places, else "".
  static std::string FindControl();

 private:
  using Key = std::pair<uid_t, int32_t>;
  std::string DirOf(const Key& k) const;
  // Rewrites k's runs file (removes it when no run uses k); best effort: a failure is logged.
  void Persist(const Key& k);
  // Reads the runs files under dir_ (constructor).
  void Load();
  // Runs the control program for k (as its owner), with `input` on its stdin.
  Status Control(const Key& k, gid_t gid, const std::vector<std::string>& args,
                 const std::string& input);

  std::string control_;
  std::string dir_;
  bool as_owner_;
  std::mutex mu_;
  std::map<Key, std::set<std::string>> users_;  // a daemon's runs
  std::map<Key, gid_t> gids_;
  std::map<std::string, Key> runs_;
};

}  // namespace corral::agent
