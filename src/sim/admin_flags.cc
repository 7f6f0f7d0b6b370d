#include "sim/admin_flags.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

#include "core/spec.h"

namespace corral::sim {

namespace {

std::vector<std::string> SplitList(const std::string& text, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, sep)) out.push_back(item);
  return out;
}

// The cluster's node names, as the simulator names them (simulator.cc, MakeNodes).
std::vector<std::string> NodeNames(const ClusterSpec& c) {
  std::vector<std::string> out;
  for (const RegisterRequest& r : c.registered) out.push_back(r.name);
  for (int32_t n = 0; c.registered.empty() && n < c.nodes; ++n) {
    char name[32];
    std::snprintf(name, sizeof name, "n%05d", n);
    out.push_back(name);
  }
  return out;
}

// One row of --queue-tree: "queue,quota_gpus[,trace queues separated by spaces]"; "*" takes
// every trace queue no other row names.
struct TreeRow {
  QueueConfig queue;
  std::vector<std::string> takes;
};

Status ReadQueueTree(const std::string& path, std::vector<TreeRow>* rows) {
  std::ifstream in(path);
  if (!in) return InvalidArgument("--queue-tree " + path + ": cannot open the file");
  std::string line;
  int64_t n = 0;
  std::map<std::string, int64_t> seen;  // queue -> line
  while (std::getline(in, line)) {
    ++n;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    const std::string where = "--queue-tree " + path + " line " + std::to_string(n) + ": ";
    std::vector<std::string> cols = SplitList(line, ',');
    if (cols.size() < 2 || cols.size() > 3) {
      return InvalidArgument(where + "expected queue,quota_gpus[,trace queues]");
    }
    TreeRow row;
    row.queue.name = cols[0];
    if (row.queue.name.empty() || row.queue.name.front() == '/' || row.queue.name.back() == '/') {
      return InvalidArgument(where + "queue name '" + cols[0] + "' is empty or has an empty part");
    }
    char* end = nullptr;
    long quota = std::strtol(cols[1].c_str(), &end, 10);
    if (cols[1].empty() || *end != '\0' || quota < 0 || quota > INT32_MAX) {
      if (n == 1) continue;  // a header
      return InvalidArgument(where + "quota_gpus '" + cols[1] + "' is not a whole number >= 0");
    }
    row.queue.quota_gpus = static_cast<int32_t>(quota);
    if (auto [it, fresh] = seen.emplace(row.queue.name, n); !fresh) {
      return InvalidArgument(where + "queue '" + row.queue.name + "' is also on line " +
                             std::to_string(it->second));
    }
    // A parent comes before its children (the head sets them in this order).
    if (size_t slash = row.queue.name.rfind('/'); slash != std::string::npos) {
      std::string parent = row.queue.name.substr(0, slash);
      if (!seen.count(parent)) {
        return InvalidArgument(where + "queue '" + row.queue.name + "' comes before its parent '" +
                               parent + "'");
      }
    }
    if (cols.size() == 3) {
      for (const std::string& q : SplitList(cols[2], ' ')) {
        if (!q.empty()) row.takes.push_back(q);
      }
    }
    rows->push_back(std::move(row));
  }
  if (rows->empty()) return InvalidArgument("--queue-tree " + path + ": no queues");
  return Status::Ok();
}

}  // namespace

void AddAdminFlags(CLI::App& app, AdminFlags* f) {
  app.add_option("--maintenance", f->maintenance,
                 "a maintenance window NODE[,NODE..]:START:DURATION (START after the first "
                 "submission, e.g. n00000,n00001:10h:2h); no job is placed to overlap it; "
                 "repeatable");
  app.add_option("--queue-tree", f->queue_tree,
                 "CSV queue,quota_gpus[,trace queues]: queues as a head has them, hierarchical "
                 "names (org/teamA) sharing their parent's quota; the third column lists the "
                 "trace queues (space-separated; * the rest) that become the queue");
}

Result<NodeReservationSpec> ParseMaintenance(const std::string& text,
                                             const std::vector<std::string>& nodes) {
  const std::string flag = "--maintenance '" + text + "'";
  std::vector<std::string> parts = SplitList(text, ':');
  if (parts.size() != 3) return InvalidArgument(flag + ": expected NODE[,NODE..]:START:DURATION");
  NodeReservationSpec r;
  r.maintenance = true;
  for (const std::string& node : SplitList(parts[0], ',')) {
    if (std::find(nodes.begin(), nodes.end(), node) == nodes.end()) {
      return InvalidArgument(flag + ": no node '" + node + "' in the simulated cluster (" +
                             (nodes.empty() ? "none" : nodes.front() + " to " + nodes.back()) +
                             ")");
    }
    r.nodes.push_back(node);
  }
  if (r.nodes.empty()) return InvalidArgument(flag + ": no nodes");
  std::sort(r.nodes.begin(), r.nodes.end());
  r.nodes.erase(std::unique(r.nodes.begin(), r.nodes.end()), r.nodes.end());
  Result<DurationMs> start = ParseDuration("--maintenance start", parts[1]);
  if (!start.ok()) return start.status();
  Result<DurationMs> duration = ParseDuration("--maintenance duration", parts[2]);
  if (!duration.ok()) return duration.status();
  if (*start < 0) return InvalidArgument(flag + ": the start must be >= 0");
  if (*duration <= 0) return InvalidArgument(flag + ": the duration must be > 0");
  r.start_ms = *start;
  r.end_ms = *start + *duration;
  return r;
}

Status ApplyAdminFlags(const AdminFlags& f, SimConfig* cfg, std::vector<TraceJob>* jobs) {
  std::vector<NodeReservationSpec> reservations;
  const std::vector<std::string> nodes = NodeNames(cfg->cluster);
  for (const std::string& text : f.maintenance) {
    Result<NodeReservationSpec> r = ParseMaintenance(text, nodes);
    if (!r.ok()) return r.status();
    r->name = "maint-" + std::to_string(reservations.size() + 1);
    reservations.push_back(std::move(*r));
  }
  std::vector<QueueConfig> queues;
  std::vector<TraceJob> renamed = *jobs;
  if (!f.queue_tree.empty()) {
    if (!cfg->quotas.empty()) return InvalidArgument("give either --quotas or --queue-tree");
    std::vector<TreeRow> rows;
    CORRAL_RETURN_IF_ERROR(ReadQueueTree(f.queue_tree, &rows));
    std::map<std::string, std::string> becomes;  // trace queue -> tree queue
    std::string rest;                            // the row with "*"
    for (const TreeRow& row : rows) {
      for (const std::string& q : row.takes) {
        if (q == "*") {
          rest = row.queue.name;
        } else if (auto [it, fresh] = becomes.emplace(q, row.queue.name); !fresh) {
          return InvalidArgument("--queue-tree " + f.queue_tree + ": trace queue '" + q +
                                 "' is taken by both '" + it->second + "' and '" + row.queue.name +
                                 "'");
        }
      }
      queues.push_back(row.queue);
    }
    for (TraceJob& j : renamed) {
      if (auto it = becomes.find(j.queue); it != becomes.end()) {
        j.queue = it->second;
      } else if (!rest.empty()) {
        j.queue = rest;
      }
    }
  }
  cfg->reservations = std::move(reservations);
  if (!queues.empty()) {
    cfg->queues = std::move(queues);
    *jobs = std::move(renamed);
  }
  return Status::Ok();
}

}  // namespace corral::sim
