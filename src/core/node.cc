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
  for (Liveness l : {Liveness::kAlive, Liveness::kUnreachable, Liveness::kDown}) {
    if (text == LivenessName(l)) {
      *out = l;
      return true;
    }
  }
  return false;
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
  for (Drain d : {Drain::kNone, Drain::kDraining, Drain::kDrained}) {
    if (text == DrainName(d)) {
      *out = d;
      return true;
    }
  }
  return false;
}

NodeState Node::state() const {
  if (liveness == Liveness::kDown) return NodeState::kDown;
  if (liveness == Liveness::kUnreachable) return NodeState::kUnreachable;
  if (drain == Drain::kDraining) return NodeState::kDraining;
  if (drain == Drain::kDrained) return NodeState::kDrained;
  return NodeState::kReady;
}

}  // namespace corral
