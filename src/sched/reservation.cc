// Reservations for blocked jobs (DESIGN §6.6): when and where the job would start if running
// jobs ended at their expected ends, and holds that keep later jobs from delaying it.
#include <algorithm>
#include <string>

#include "core/status.h"
#include "sched/state.h"

namespace corral::sched {

std::vector<NodeDemand> DemandOf(const ClusterModel& model, const Shape& s,
                                 const std::vector<ReplicaPlacement>& placement) {
  std::vector<NodeDemand> out;
  for (const ReplicaPlacement& p : placement) {
    int32_t slot = model.Find(p.node);
    if (slot < 0) continue;
    auto it = std::find_if(out.begin(), out.end(), [&](auto& d) { return d.slot == slot; });
    if (it == out.end()) {
      out.push_back({slot, 0, 0, 0});
      it = out.end() - 1;
    }
    it->gpus += s.gpus;
    it->cpu += s.cpu;
    it->mem += s.mem;
  }
  std::sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.slot < b.slot; });
  return out;
}

namespace {

// Adds what a run frees on each node to `acc`.
void Accumulate(const SchedState& st, const RunEntry& r, std::vector<NodeDemand>* acc) {
  const std::vector<int32_t>& slots = st.SlotsOf(r);
  for (size_t k = 0; k < r.placement.size(); ++k) {
    const ReplicaPlacement& p = r.placement[k];
    int32_t slot = slots[k];
    if (slot < 0) continue;
    auto it = std::find_if(acc->begin(), acc->end(), [&](auto& d) { return d.slot == slot; });
    if (it == acc->end()) {
      acc->push_back({slot, 0, 0, 0});
      it = acc->end() - 1;
    }
    if (p.gpu_milli.empty()) it->gpus += static_cast<int32_t>(p.gpus.size());  // shares: none
    it->cpu += r.job.per_replica.cpu_milli;
    it->mem += r.job.per_replica.memory_mb;
  }
}

}  // namespace

void HoldFor(SchedState& st, const Shape& s, const std::vector<ReplicaPlacement>& placement,
             const std::vector<NodeDemand>& released, TimeMs hold_start) {
  for (const NodeDemand& d : DemandOf(st.model, s, placement)) {
    NodeDemand rel{d.slot, 0, 0, 0};
    for (const NodeDemand& r : released) {
      if (r.slot == d.slot) rel = r;
    }
    const NodeSlot& n = st.model.slot(d.slot);
    int32_t g = std::clamp(d.gpus - rel.gpus, 0, std::max(0, n.free_gpus));
    int32_t c = std::clamp(d.cpu - rel.cpu, 0, std::max(0, n.free_cpu));
    int64_t m = std::clamp<int64_t>(d.mem - rel.mem, 0, std::max<int64_t>(0, n.free_mem));
    st.model.AddHold(d.slot, g, c, m, hold_start);
  }
}

namespace {

// The release scan: runs released by expected end (the job's own victims first) until the job
// fits, on nodes not reserved against a job ending at `end` (what_if.h). On success sets
// `start`, what the released runs free on each node (`acc`) and the placement.
bool ScanReleases(SchedState& st, const PendingEntry& job, const Shape& s, TimeMs end,
                  TimeMs* start_out, std::vector<NodeDemand>* acc,
                  std::vector<ReplicaPlacement>* placement) {
  std::vector<const RunEntry*> order;
  // The job's own victims end first; runs preempted for other jobs are theirs, never ours.
  if (auto it = st.victims_of.find(job.job.id); it != st.victims_of.end()) {
    for (JobId v : it->second) {
      if (auto r = st.running.find(v); r != st.running.end()) order.push_back(&r->second);
    }
  }
  WhatIf& w = st.what_if;
  w.Reset(&st.model, s, end);
  size_t released = 0;
  acc->clear();
  bool ok = false;
  TimeMs start = st.now;
  auto release = [&](const RunEntry* r) {
    w.Release(r->placement, st.SlotsOf(*r), r->job.per_replica, r->job.user, -1);
    ++released;
    Accumulate(st, *r, acc);
    ++st.work;
  };
  for (const RunEntry* r : order) release(r);
  if (released > 0) {
    ++st.work;
    ok = w.Fits();
  }
  if (!ok) {
    size_t next_try = released + 1;
    auto it = st.by_end.begin();
    while (it != st.by_end.end() && st.work <= st.config.max_work_per_pass) {
      // Release every run with this expected end, then try.
      TimeMs at = it->first;
      // Runs without a time limit have no order of ending: release them one at a time.
      do {
        const RunEntry& r = st.running.at(it->second);
        ++it;
        if (r.preempted_for == 0) release(&r);
      } while (at != kUnknownTime && it != st.by_end.end() && it->first == at);
      if (w.free_gpus() < s.TotalGpus() || released < next_try) continue;
      ++st.work;
      if (w.Fits()) {
        ok = true;
        start = at;
        break;
      }
      next_try = released + std::max<size_t>(1, released / 8);
    }
    if (!ok && it == st.by_end.end() && released >= 1 && st.work <= st.config.max_work_per_pass) {
      ok = w.Fits();
      if (ok) start = st.by_end.empty() ? st.now : std::prev(st.by_end.end())->first;
    }
  }
  if (!ok) return false;
  Placer placer(st.model, &st.work);
  w.Apply();
  bool placed = placer.Place(s, kUnknownTime, false, placement);
  w.Restore();
  CORRAL_CHECK(placed,
               "WhatIf::Fits disagrees with Placer::Place for job " + std::to_string(job.job.id));
  if (start != kUnknownTime) start = std::max(start, st.now);
  *start_out = start;
  return true;
}

}  // namespace

// The release scan runs on a WhatIf scratch (what_if.h): the model is touched only to find
// the placement once the job fits.
bool EarliestStart(SchedState& st, const PendingEntry& job, const Shape& s, TimeMs* start) {
  std::vector<NodeDemand> acc;
  std::vector<ReplicaPlacement> placement;
  return ScanReleases(st, job, s, ExpectedEndOf(job.job, st.now), start, &acc, &placement);
}

bool Reserve(SchedState& st, const PendingEntry& job, Reservation* out, const Shape* shape) {
  const Shape s = shape != nullptr ? *shape : ShapeOf(job.job);
  // Admin reservations: the scan keeps off nodes that the job would overlap if it started now.
  // Starting later, it may overlap one it would not have: then the scan is done again off
  // every reserved node (an upper bound: it may start there once the reservation is over).
  const TimeMs end_now = ExpectedEndOf(job.job, st.now);
  TimeMs start = st.now;
  std::vector<NodeDemand> acc;
  std::vector<ReplicaPlacement> placement;
  if (!ScanReleases(st, job, s, end_now, &start, &acc, &placement)) return false;
  if (end_now != kUnknownTime) {
    const TimeMs end = start == kUnknownTime ? kUnknownTime : start + (end_now - st.now);
    bool overlaps = false;
    for (const ReplicaPlacement& p : placement) {
      int32_t slot = st.model.Find(p.node);
      overlaps = overlaps || (slot >= 0 && ReservedAgainst(st.model.slot(slot), end));
    }
    if (overlaps) {
      placement.clear();
      if (!ScanReleases(st, job, s, kUnknownTime, &start, &acc, &placement)) return false;
    }
  }
  HoldFor(st, s, placement, acc, start == kUnknownTime ? st.now : start);
  out->job = job.job.id;
  out->after_place = 0;
  out->start = start;
  out->nodes.clear();
  for (const ReplicaPlacement& p : placement) out->nodes.push_back(p.node);
  std::sort(out->nodes.begin(), out->nodes.end());
  out->nodes.erase(std::unique(out->nodes.begin(), out->nodes.end()), out->nodes.end());
  return true;
}

}  // namespace corral::sched
