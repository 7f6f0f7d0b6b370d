// The simulator's loop against a whole head (head::Head) instead of its core alone: the
// head's shell with a real SQLite store in a directory, its group commit, its credentials and
// its held syncs, on a virtual clock (HeadConfig::driven). Each emulated agent registers with
// the join token, syncs with its own credential and holds a sync for its next orders, as a
// real agent does; users' calls come with the admin token. The changes the loop counts are
// read back from the store as committed. Passes and ticks run where the loop runs them, so a
// trace gives the shell the same inputs at the same instants as the core alone: the parity
// test (shell_parity_test.cc) holds the two to the same decisions.
//
// Tests only: every call waits for the head to settle (Head::Settle), a commit each.
#pragma once

#include <string>

#include "core/time.h"
#include "sim/head_port.h"

namespace corral::sim {

// A head with `config`, started at `now`, its state in `state_dir` (created if needed; empty,
// or the head recovers what is there). A job submitted without an owner is the admin's.
// `sync_hold_ms`: how long each agent asks the head to hold its sync (the head holds it at
// most a third of unreachable_after, in wall time); a sync answered with nothing new is
// taken as any other, and the agent syncs again.
Result<std::unique_ptr<HeadPort>> OpenShellPort(head::CoreConfig config, TimeMs now,
                                                const std::string& state_dir,
                                                DurationMs sync_hold_ms = kMinute);

}  // namespace corral::sim
