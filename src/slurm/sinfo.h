// sinfo's views of Corral's nodes: the default and -l/-N/-s layouts, and any -o/--format
// ("%P %.5a %10N") or -O/--Format ("partition:10,nodes") as Slurm prints them. Every queue is a
// partition over every node; the first is the default (marked '*'). Pure, any thread.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "core/views.h"

namespace corral::slurm {

struct SinfoOptions {
  std::string format;                        // -o: "%P %a"; with long_format "", the default layout
  std::string long_format;                   // -O: "partition:10,nodes:.5 ,statelong"
  bool per_node = false;                     // -N: one line per node and partition
  bool long_output = false;                  // -l: the time line first, and the long default layout
  bool summarize = false;                    // -s: one line per partition, NODES(A/I/O/T)
  bool header = true;                        // -h: false
  std::vector<std::string> only_partitions;  // -p: empty, all
  std::vector<std::string> only_states;      // -t: compact or long names; empty, all
};

// A node's state as sinfo's compact STATE column shows it: idle, mix, alloc, drng, drain,
// down, down*, maint, resv.
std::string SinfoState(const NodeView& n);

// Renders sinfo. `partitions`: the queue names, the default first. An unknown field is an
// error naming it and the known ones.
Result<std::string> RenderSinfo(const std::vector<NodeView>& nodes,
                                const std::vector<std::string>& partitions, const SinfoOptions& o,
                                TimeMs now);

}  // namespace corral::slurm
