#include "core/node.h"

#include "core/enum_names.h"

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
  static constexpr NodeState kAll[] = {NodeState::kReady, NodeState::kDraining, NodeState::kDrained,
                                       NodeState::kUnreachable, NodeState::kDown};
  return ParseByName(text, kAll, NodeStateName, out);
}

const char* LivenessName(Liveness l) {
  switch (l) {
    case Liveness::kAlive:
      return "alive";
    case Liveness::kUnreachable:
      return "unreachable";
    case Liveness::kDown:
      return "down";
  }
  return "unknown";
}

bool ParseLiveness(const std::string& text, Liveness* out) {
  static constexpr Liveness kAll[] = {Liveness::kAlive, Liveness::kUnreachable, Liveness::kDown};
  return ParseByName(text, kAll, LivenessName, out);
}

const char* DrainName(Drain d) {
  switch (d) {
    case Drain::kNone:
      return "none";
    case Drain::kDraining:
      return "draining";
    case Drain::kDrained:
      return "drained";
  }
  return "unknown";
}

bool ParseDrain(const std::string& text, Drain* out) {
  static constexpr Drain kAll[] = {Drain::kNone, Drain::kDraining, Drain::kDrained};
  return ParseByName(text, kAll, DrainName, out);
}

NodeState Node::state() const {
  if (liveness == Liveness::kDown) return NodeState::kDown;
  if (liveness == Liveness::kUnreachable) return NodeState::kUnreachable;
  if (drain == Drain::kDraining) return NodeState::kDraining;
  if (drain == Drain::kDrained) return NodeState::kDrained;
  return NodeState::kReady;
}

}  // namespace corral
