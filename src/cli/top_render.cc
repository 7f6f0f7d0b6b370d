// The screen of `corral top` as text: a pure function of what the head answered, so that it is
// tested without a terminal.
#include <algorithm>
#include <cstdio>

#include "cli/commands.h"
#include "cli/json_fields.h"
#include "cli/table.h"

namespace corral::cli {
namespace {

// One character per GPU, darker as it gets busier; '?' where the agent measured nothing.
std::string Heat(const Json& gpus, int64_t* sum, int64_t* measured) {
  static const char kRamp[] = " .:-=+*#%@";
  std::string out;
  for (const Json& g : gpus) {
    if (!g.contains("utilization_percent")) {
      out += '?';
      continue;
    }
    int64_t u = std::clamp<int64_t>(FieldInt(g, "utilization_percent"), 0, 100);
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
  for (const Json& n : s.nodes) {
    Json g = n.value("gpus", Json::array());
    gpus += static_cast<int64_t>(g.size());
    used += FieldInt(n, "gpus_used");
    int64_t node_sum = 0, node_measured = 0;
    std::string heat = Heat(g, &node_sum, &node_measured);
    util_sum += node_sum;
    measured += node_measured;
    nodes.AddRow({FieldText(n, "name"), FieldText(n, "state"),
                  std::to_string(FieldInt(n, "gpus_used")) + "/" + std::to_string(g.size()),
                  node_measured ? std::to_string(node_sum / node_measured) + "%" : "-",
                  "[" + heat + "]", std::to_string(n.value("runs", Json::array()).size())});
  }
  Table queues({"QUEUE", "QUOTA", "USED", "PENDING", "RUNNING"});
  int64_t pending = 0, running = 0;
  for (const Json& q : s.queues) {
    pending += FieldInt(q, "pending");
    running += FieldInt(q, "running");
    queues.AddRow({FieldText(q, "name"), std::to_string(FieldInt(q, "quota_gpus")),
                   std::to_string(FieldInt(q, "used_gpus")), std::to_string(FieldInt(q, "pending")),
                   std::to_string(FieldInt(q, "running"))});
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
