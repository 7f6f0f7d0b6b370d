// The screen of `corral top` as text: a pure function of what the head answered, so that it is
// tested without a terminal.
#include <algorithm>
#include <cstdio>

#include "cli/commands.h"
#include "cli/table.h"

namespace corral::cli {
namespace {

// One character per GPU, darker as it gets busier; '?' where the agent measured nothing.
std::string Heat(const NodeView& n, int64_t* sum, int64_t* measured) {
  static const char kRamp[] = " .:-=+*#%@";
  std::string out;
  for (const Gpu& g : n.node.gpus) {
    auto s = std::find_if(n.gpu_samples.begin(), n.gpu_samples.end(),
                          [&](const GpuSample& x) { return x.index == g.index; });
    if (s == n.gpu_samples.end()) {
      out += '?';
      continue;
    }
    int64_t u = std::clamp<int64_t>(s->utilization_percent, 0, 100);
    *sum += u;
    ++*measured;
    out += kRamp[std::min<int64_t>(9, u / 10)];
  }
  return out;
}

std::vector<std::string> SplitLines(const std::string& text) {
  std::vector<std::string> lines;
  size_t i = 0;
  while (i < text.size()) {
    size_t j = text.find('\n', i);
    if (j == std::string::npos) j = text.size();
    lines.push_back(text.substr(i, j - i));
    i = j + 1;
  }
  return lines;
}

}  // namespace

std::vector<std::string> RenderTop(const TopSnapshot& s, int width, int height) {
  int64_t gpus = 0, used = 0, util_sum = 0, measured = 0;
  Table nodes({"NODE", "STATE", "GPUS", "UTIL", "HEAT (one per GPU)", "RUNS"});
  for (const NodeView& n : s.nodes) {
    const size_t node_gpus = n.node.gpus.size();
    gpus += static_cast<int64_t>(node_gpus);
    used += n.gpus_used;
    int64_t node_sum = 0, node_measured = 0;
    std::string heat = Heat(n, &node_sum, &node_measured);
    util_sum += node_sum;
    measured += node_measured;
    nodes.AddRow({n.node.name, NodeStateName(n.node.state()),
                  std::to_string(n.gpus_used) + "/" + std::to_string(node_gpus),
                  node_measured ? std::to_string(node_sum / node_measured) + "%" : "-",
                  "[" + heat + "]", std::to_string(n.runs.size())});
  }
  Table queues({"QUEUE", "QUOTA", "USED", "PENDING", "RUNNING"});
  int64_t pending = 0, running = 0;
  for (const QueueView& q : s.queues) {
    pending += q.pending;
    running += q.running;
    queues.AddRow({q.config.name, std::to_string(q.config.quota_gpus), std::to_string(q.used_gpus),
                   std::to_string(q.pending), std::to_string(q.running)});
  }
  std::vector<std::string> lines;
  lines.push_back("corral top  " + std::to_string(s.nodes.size()) + " nodes  " +
                  std::to_string(used) + "/" + std::to_string(gpus) + " GPUs allocated  " +
                  (measured ? std::to_string(util_sum / measured) + "% busy" : "busy unknown") +
                  "  " + std::to_string(running) + " running  " + std::to_string(pending) +
                  " pending  rev " + std::to_string(s.revision) + "  (q quits)");
  if (!s.error.empty()) lines.push_back("! " + s.error);
  lines.push_back("");
  for (std::string& l : SplitLines(nodes.Render())) lines.push_back(std::move(l));
  lines.push_back("");
  for (std::string& l : SplitLines(queues.Render())) lines.push_back(std::move(l));
  // What does not fit is cut: the summary line first, then nodes, then queues.
  if (height >= 0 && static_cast<int>(lines.size()) > height) lines.resize(std::max(height, 0));
  if (width >= 0) {
    for (std::string& l : lines) {
      if (static_cast<int>(l.size()) > width) l.resize(width);
    }
  }
  return lines;
}

}  // namespace corral::cli
