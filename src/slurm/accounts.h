// Slurm's accounting views of Corral: `sacctmgr show user|account|assoc`, `sshare` and `sprio`.
// A queue is an account (a sub-queue "org/team" is an account under "org"; every top queue is
// under Slurm's "root"), and a user has an association with each queue that admits them (its
// access lists, as the head checks them at submit). Fair share is each queue's and user's
// GPU-seconds over a window; the priority factors are those Corral's scheduler orders by.
// Pure, any thread.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/identity.h"
#include "core/job.h"
#include "core/node.h"
#include "core/status.h"

namespace corral::slurm {

// A Corral user as sacctmgr shows one: from the tokens the caller may list.
struct AccountUser {
  std::string name;
  Role role = Role::kUser;
  std::vector<std::string> groups;  // its tokens' groups, for the queues' access lists
};

struct AccountsView {
  std::vector<QueueConfig> queues;  // the accounts; "default" is every user's default one
  std::vector<AccountUser> users;
};

// Whether `queue` admits `user`: every queue on its path that has an access list names the
// user or one of its groups (as the head checks a submission). Admins: every queue.
bool QueueAdmits(const AccountsView& v, const AccountUser& user, const std::string& queue);

// Slurm's print_fields output: a table (each field padded to its width, "+" marking a cut
// value, a dashes line under the header), or with parsable2 '|' between fields (parsable:
// after each).
struct PrintOptions {
  bool header = true;
  bool parsable = false;   // -p
  bool parsable2 = false;  // -P
};

// `sacctmgr show ENTITY ARGS...` with ENTITY user, account or association (Slurm's
// abbreviations too) and ARGS its words: names, `where`, `name=`/`user=`/`account=`/
// `accounts=` filters, `format=F[%W],...`, `withassoc` (or -s, passed as with_assoc).
Result<std::string> RenderSacctmgrShow(const AccountsView& v, const std::string& entity,
                                       const std::vector<std::string>& args, bool with_assoc,
                                       const PrintOptions& p);

// Usage per queue and per (queue, user): GPU-seconds in the window, from the jobs.
struct ShareUsage {
  std::map<std::string, double> by_queue;
  std::map<std::pair<std::string, std::string>, double> by_queue_user;
  double total = 0;
};
ShareUsage ComputeShareUsage(const std::vector<Job>& jobs, TimeMs from, TimeMs to);

struct SshareOptions {
  std::vector<std::string> fields;    // empty: Slurm's default (or long) set
  bool long_output = false;           // -l
  bool all_users = false;             // -a: every user's lines, not only `users`'
  std::vector<std::string> users;     // -u, or the caller; lines of these users
  std::vector<std::string> accounts;  // -A: only these accounts
};
Result<std::string> RenderSshare(const AccountsView& v, const ShareUsage& u, const SshareOptions& o,
                                 const PrintOptions& p);

// A user's fair-share factor in a queue, as sshare's FairShare: 2^(-usage/shares), where
// usage is the user's part of all usage and shares the user's part of the queue's weight
// among its siblings' (Slurm's classic formula). 1 without usage.
double FairShareFactor(const AccountsView& v, const ShareUsage& u, const std::string& queue,
                       const std::string& user);

struct SprioOptions {
  std::string format;  // -o; "": Slurm's default (or -l's)
  bool long_output = false;
  bool normalized = false;  // -n
  bool show_user = false;   // -u given: the USER column
  bool header = true;
};
// The pending jobs' priority factors: PRIORITY is the job's own priority (the scheduler's
// first key), AGE its wait against a week (x1000), FAIRSHARE its user's factor in its queue
// (x1000), the others 0. Jobs held or waiting on dependencies are left out, as Slurm's sprio
// leaves them out.
Result<std::string> RenderSprio(const AccountsView& v, const ShareUsage& u,
                                const std::vector<Job>& pending, const SprioOptions& o, TimeMs now);

}  // namespace corral::slurm
