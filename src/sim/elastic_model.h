// Elastic jobs in the simulator (docs/simulation.md, "Elastic jobs"): which trace jobs a
// simulation submits as elastic jobs (docs/elastic.md), with what range of replicas, and how
// fast such a job progresses on part of its GPUs. Pure functions; the loop (simulator.cc)
// applies them as the core grows and shrinks the jobs' runs.
//
// The scaling model: a job's throughput on g GPUs is proportional to g^alpha (0 < alpha <= 1,
// sub-linear: each GPU added helps less, as gradient communication and smaller per-GPU batches
// cost), so a world of g of the trace's G GPUs does (g / G)^alpha of the trace's work per unit
// of time: the trace's duration at g = G. Every change of membership costs the whole world
// `resize_overhead` without progress (torchrun restarts every worker, which re-rendezvous and
// reload the last checkpoint); the workers checkpoint at every step, so a membership change
// loses no other work.
#pragma once

#include <cstdint>

#include "core/time.h"
#include "sim/trace.h"

namespace corral::sim {

struct ElasticModel {
  bool on = false;
  // MIN = max(1, ceil(min_fraction x MAX)) replicas.
  double min_fraction = 0.5;
  double alpha = 0.8;
  DurationMs resize_overhead_ms = 30 * kSecond;
};

// An elastic trace job as submitted: between min and max replicas of per_replica GPUs each.
struct ElasticShape {
  int32_t min = 0;
  int32_t max = 0;
  int32_t per_replica = 0;
  int32_t gpus = 0;  // the trace's GPU count (max x per_replica)
};

// The shape the model gives trace job t on nodes of gpus_per_node GPUs; false: t stays rigid
// (the model is off, t has one GPU or a share of one, or its own recorded spec). A job of up to
// a node's GPUs is one replica per GPU; a larger one, the whole-node replicas a rigid gang of it
// has.
bool ElasticShapeOf(const TraceJob& t, int32_t gpus_per_node, const ElasticModel& m,
                    ElasticShape* out);

// The share of the trace's rate at which a world of `replicas` replicas works: (g / G)^alpha.
double ElasticRate(const ElasticShape& s, int32_t replicas, double alpha);

}  // namespace corral::sim
