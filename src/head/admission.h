// Admission: which pending jobs the scheduler sees (Slurm's held-by-user, held-by-dependency
// and array throttling). A pending job is admitted, or held with a reason, until its user
// releases it, its dependencies hold and its array has room under its %P limit. The component
// owns every fact of that decision (the holds, each array's live elements, who waits on whom)
// and is rebuilt from the durable state on recovery; the core feeds the scheduler what it
// admits and turns its steps (Next) into changes.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "core/codec.h"
#include "head/cluster_state.h"

namespace corral::head {

// The jobs a dependency names: an array's id stands for all of its elements.
std::vector<const Job*> DependencyTargets(const ClusterState& s, JobId id);

class Admission {
 public:
  // Decides for a pending job: nullopt when admitted (the caller hands it to the scheduler),
  // else held, and why.
  std::optional<PendingReason> Admit(const ClusterState& s, const Job& job);
  // A pending job leaves admission (it ended, or is admitted again after a hold or an update):
  // true if it was admitted, and so is in the scheduler; its array slot is freed.
  bool Withdraw(const Job& job);
  // A job admitted before this leadership (running, or requeued after a run) fills its array's
  // slot: recovery counts it without deciding again.
  void CountAdmitted(const Job& job);
  // An admitted job ended after running: its array slot frees.
  void Release(const Job& job);
  // A job ended: the jobs that wait on it, or share a singleton name with it, are looked at again.
  void OnEnded(const Job& job);
  // A retired job is forgotten.
  void Forget(JobId retired);

  // What settling admission does next, one step at a time, so that the core can emit changes
  // between steps (which may add more work): a job whose dependency can never be met is
  // cancelled; a held job is decided again (admitted or held anew, by Admit); an array element
  // gets the room its array has again and goes to the scheduler.
  struct Cancel {
    JobId job;
    std::string why;
  };
  struct Reconsider {
    JobId job;
  };
  struct Admitted {
    JobId job;
  };
  using Step = std::variant<Cancel, Reconsider, Admitted>;
  std::optional<Step> Next(const ClusterState& s);

  bool IsHeld(JobId id) const { return held_.count(id) > 0; }
  // The facts for the model test (replay equals live): the holds and their indexes.
  Json Summary() const;

 private:
  void Hold(const Job& job, bool waits);
  void ForgetWaits(const Job& job);
  std::optional<Step> NextArrayElement(const ClusterState& s);

  std::set<JobId> held_;                         // pending, not in the scheduler
  std::map<JobId, std::set<JobId>> array_held_;  // array -> elements over its %P
  std::map<JobId, int32_t> array_live_;          // array -> elements admitted and not over
  std::map<JobId, std::set<JobId>> waiting_on_;  // job -> held jobs depending on it
  std::set<JobId> singletons_;                   // held by singleton
  std::set<JobId> recheck_;                      // held jobs to decide again
  std::set<JobId> release_arrays_;               // arrays with room again
  std::map<JobId, std::string> doomed_;          // held jobs whose dependency failed
};

}  // namespace corral::head
