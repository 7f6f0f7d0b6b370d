// The simulator's flags for what an admin sets up before the trace starts, kept apart from the
// other flags: maintenance windows (--maintenance) and a queue tree with quotas (--queue-tree).
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "sim/simulator.h"
#include "sim/trace.h"

namespace CLI {
class App;
}

namespace corral::sim {

struct AdminFlags {
  std::vector<std::string> maintenance;  // NODE[,NODE..]:START:DURATION, each a window
  std::string queue_tree;                // CSV: queue,quota_gpus[,trace queues]
};

void AddAdminFlags(CLI::App& app, AdminFlags* f);

// Sets cfg->reservations (one maintenance window per --maintenance, named maint-1, ...; its
// nodes must be among the cluster's) and, with --queue-tree, cfg->queues, renaming the trace
// queues each row takes in `jobs`. A bad value is an error naming its flag (and the line of
// the file), and changes nothing.
Status ApplyAdminFlags(const AdminFlags& f, SimConfig* cfg, std::vector<TraceJob>* jobs);

// One --maintenance value: "n00001,n00002:10h:2h" (nodes, start after the trace's first
// submission, duration; durations as 90s, 30m, 2h, 1d). `nodes`: the cluster's node names.
Result<NodeReservationSpec> ParseMaintenance(const std::string& text,
                                             const std::vector<std::string>& nodes);

}  // namespace corral::sim
