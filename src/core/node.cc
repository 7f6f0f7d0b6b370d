#include "core/node.h"

namespace corral {

const char* NodeStateName(NodeState s) {
  switch (s) {
    case NodeState::kReady:
      return "ready";
    case NodeState::kDraining:
      return "draining";
    case NodeState::kDrained:
      return "drained";
    case NodeState::kUnreachable:
      return "unreachable";
    case NodeState::kDown:
      return "down";
  }
  return "unknown";
}

bool ParseNodeState(const std::string& text, NodeState* out) {
  for (NodeState s : {NodeState::kReady, NodeState::kDraining, NodeState::kDrained,
                      NodeState::kUnreachable, NodeState::kDown}) {
    if (text == NodeStateName(s)) {
      *out = s;
      return true;
    }
  }
  return false;
}

}  // namespace corral
