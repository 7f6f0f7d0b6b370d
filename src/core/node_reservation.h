// Advance reservations and maintenance windows (Slurm's `scontrol create reservation`): a set
// of nodes kept for some users and queues, or for nobody (maintenance), from start to end.
// Admins create and delete them; the scheduler keeps every other job off those nodes whenever
// its run could overlap the reservation.
#pragma once

#include <string>
#include <vector>

#include "core/codec.h"
#include "core/status.h"
#include "core/time.h"

namespace corral {

struct NodeReservationSpec {
  std::string name;
  std::vector<std::string> nodes;   // sorted, distinct
  TimeMs start_ms = 0;              // epoch ms
  TimeMs end_ms = 0;                // > start_ms
  bool maintenance = false;         // no job at all on its nodes during it
  std::vector<std::string> users;   // who may submit into it (--reservation); empty: anyone
  std::vector<std::string> queues;  // and from which queues; empty: any
  bool operator==(const NodeReservationSpec&) const = default;
};

Json ToJson(const NodeReservationSpec& r);
// The stored form (trusted: the head wrote it).
Result<NodeReservationSpec> NodeReservationFromJson(const Json& j);
// A reservation as an admin sends it (POST /v1/reservations): {"name", "nodes", "start_ms",
// "duration" or "end_ms", "maintenance", "users", "queues"}; every field checked, the wrong
// one named. Whether its nodes exist and it overlaps another is the head's to check.
Result<NodeReservationSpec> ParseNodeReservation(const Json& body);

}  // namespace corral
