#include "sched/start_estimate.h"

#include <algorithm>
#include <climits>
#include <queue>
#include <tuple>

namespace corral::sched {
namespace {

// Free GPUs per node, with the nodes grouped by how many they have free, so that whether a
// gang fits is a sum over GPU counts rather than a scan of the nodes.
class FreeGpus {
 public:
  FreeGpus() = default;  // empty until assigned
  FreeGpus(std::vector<int32_t> free, int32_t max_gpus, bool index_nodes)
      : free_(std::move(free)), count_(max_gpus + 1, 0), index_nodes_(index_nodes) {
    if (index_nodes_) {
      nodes_.resize(max_gpus + 1);
      pos_.resize(free_.size(), 0);
    }
    for (int32_t n = 0; n < static_cast<int32_t>(free_.size()); ++n) {
      Enter(n);
      total_ += free_[n];
    }
  }
  int32_t operator[](int32_t n) const { return free_[n]; }
  void Add(int32_t n, int32_t delta) {
    Leave(n);
    total_ -= free_[n];
    free_[n] = std::clamp(free_[n] + delta, 0, max_gpus());
    total_ += free_[n];
    Enter(n);
  }
  int64_t total() const { return total_; }
  int32_t max_gpus() const { return static_cast<int32_t>(count_.size()) - 1; }
  int64_t count(int32_t k) const { return count_[k]; }
  const std::vector<int32_t>& nodes(int32_t k) const { return nodes_[k]; }

 private:
  void Enter(int32_t n) {
    ++count_[free_[n]];
    if (!index_nodes_) return;
    pos_[n] = static_cast<int32_t>(nodes_[free_[n]].size());
    nodes_[free_[n]].push_back(n);
  }
  void Leave(int32_t n) {
    --count_[free_[n]];
    if (!index_nodes_) return;
    std::vector<int32_t>& v = nodes_[free_[n]];
    v[pos_[n]] = v.back();
    pos_[v.back()] = pos_[n];
    v.pop_back();
  }
  std::vector<int32_t> free_;
  std::vector<int64_t> count_;
  std::vector<std::vector<int32_t>> nodes_;  // by free GPUs (unordered)
  std::vector<int32_t> pos_;                 // each node's place in its nodes_ list
  bool index_nodes_ = false;
  int64_t total_ = 0;
};

int32_t PerNode(const EstimateJob& j, int32_t free) {
  int32_t n = free / j.gpus_per_replica;
  return j.max_replicas_per_node > 0 ? std::min(n, j.max_replicas_per_node) : n;
}

bool Matches(const EstimateJob& j, const EstimateNode& n) {
  return j.gpu_model.empty() || j.gpu_model == n.gpu_model;
}

// Does the job fit on `f`? Jobs asking for a GPU model scan the nodes.
bool Fits(const EstimateJob& j, const FreeGpus& f, const std::vector<EstimateNode>& nodes) {
  int64_t room = 0;
  if (!j.gpu_model.empty()) {
    for (int32_t n = 0; n < static_cast<int32_t>(nodes.size()) && room < j.replicas; ++n) {
      if (Matches(j, nodes[n])) room += PerNode(j, f[n]);
    }
    return room >= j.replicas;
  }
  for (int32_t k = f.max_gpus(); k >= j.gpus_per_replica && room < j.replicas; --k) {
    room += f.count(k) * PerNode(j, k);
  }
  return room >= j.replicas;
}

// Replicas per node for a job that fits on `f`: on one node if one has room for all (the one
// with the least room), else on the nodes with the most free GPUs first (fewest nodes).
std::vector<std::pair<int32_t, int32_t>> Choose(const EstimateJob& j, const FreeGpus& f,
                                                const std::vector<EstimateNode>& nodes) {
  std::vector<std::pair<int32_t, int32_t>> out;
  int32_t left = j.replicas;
  if (!j.gpu_model.empty()) {
    std::vector<int32_t> order;
    for (int32_t n = 0; n < static_cast<int32_t>(nodes.size()); ++n) {
      if (Matches(j, nodes[n]) && PerNode(j, f[n]) > 0) order.push_back(n);
    }
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return f[a] > f[b]; });
    for (int32_t n : order) {
      if (left == 0) break;
      int32_t take = std::min(left, PerNode(j, f[n]));
      out.push_back({n, take});
      left -= take;
    }
    return out;
  }
  for (int32_t k = j.gpus_per_replica; k <= f.max_gpus(); ++k) {
    if (f.count(k) > 0 && PerNode(j, k) >= left) return {{f.nodes(k).back(), left}};
  }
  for (int32_t k = f.max_gpus(); k >= j.gpus_per_replica && left > 0; --k) {
    for (int32_t n : f.nodes(k)) {
      if (left == 0) break;
      int32_t take = std::min(left, PerNode(j, k));
      out.push_back({n, take});
      left -= take;
    }
  }
  return out;
}

// The runs that pending jobs may preempt, by rank class, and which of them are gone (ended or
// taken by an earlier job of the sweep).
class Victims {
 public:
  Victims(const std::vector<EstimateRun>& runs, const std::vector<EstimateRelease>& releases,
          int32_t node_count)
      : runs_(runs), parts_(runs.size()), state_(runs.size(), kLive) {
    for (const EstimateRelease& r : releases) {
      if (r.run < 0 || r.run >= static_cast<int32_t>(runs.size()) || r.node < 0 ||
          r.node >= node_count || r.gpus <= 0) {
        continue;
      }
      parts_[r.run].push_back({r.node, r.gpus, r.at != kUnknownTime});
    }
    int32_t classes = 0;
    for (const EstimateRun& r : runs) classes = std::max(classes, r.rank_class + 1);
    by_class_.resize(classes);
    for (int32_t i = 0; i < static_cast<int32_t>(runs.size()); ++i) {
      const EstimateRun& r = runs[i];
      if (r.rank_class < 0 || parts_[i].empty()) continue;
      by_class_[r.rank_class].push_back({i, r.rank, r.preemptible_at});
      for (auto [from, rank] : r.later_ranks) {
        by_class_[r.rank_class].push_back({i, rank, std::max(from, r.preemptible_at)});
      }
    }
    gpus_before_.resize(classes);
    for (int32_t c = 0; c < classes; ++c) {
      std::vector<Entry>& v = by_class_[c];
      std::stable_sort(v.begin(), v.end(),
                       [](const Entry& a, const Entry& b) { return a.rank > b.rank; });
      gpus_before_[c].assign(1, 0);
      for (const Entry& e : v) gpus_before_[c].push_back(gpus_before_[c].back() + Gpus(e.run));
    }
  }
  struct Part {
    int32_t node;
    int32_t gpus;
    bool ends;  // released at a known time (counted in what is free once all ends passed)
  };
  bool taken(int32_t run) const { return state_[run] == kTaken; }
  // The cursor passed (one of) its ends: no longer a victim.
  void End(int32_t run) { state_[run] = kEnded; }
  const std::vector<Part>& parts(int32_t run) const { return parts_[run]; }

  // Takes runs that `j` outranks, preemptible at `at`, until `j` fits on `f` (their GPUs
  // added to it); then gives back those it does not need. False (and `f` as it was) if even
  // all of them are not enough.
  bool Take(const EstimateJob& j, TimeMs at, FreeGpus& f, const std::vector<EstimateNode>& nodes,
            std::vector<int32_t>* taken) {
    taken->clear();
    if (j.rank_class < 0 || j.rank_class >= static_cast<int32_t>(by_class_.size())) return false;
    const std::vector<Entry>& v = by_class_[j.rank_class];
    // Runs outranked (from some time on): a prefix of v (rank descending).
    auto end =
        std::partition_point(v.begin(), v.end(), [&](const Entry& e) { return e.rank > j.rank; });
    size_t n = static_cast<size_t>(end - v.begin());
    int64_t need = static_cast<int64_t>(j.replicas) * j.gpus_per_replica;
    if (f.total() + gpus_before_[j.rank_class][n] < need) return false;  // upper bound
    bool fits = false;
    for (size_t k = 0; k < n && !fits; ++k) {
      int32_t i = v[k].run;
      const EstimateRun& r = runs_[i];
      if (state_[i] != kLive || v[k].from > at) continue;
      if (j.predicted_left_ms > 0 && r.predicted_left_ms > 0 &&
          r.predicted_left_ms <= j.predicted_left_ms) {
        continue;
      }
      Release(i, f, +1);
      state_[i] = kTaken;  // until given back: a run may be listed at several ranks
      taken->push_back(i);
      fits = Fits(j, f, nodes);
    }
    if (!fits) {
      for (int32_t i : *taken) {
        Release(i, f, -1);
        state_[i] = kLive;
      }
      taken->clear();
      return false;
    }
    // The most recently taken made it fit; the others back where not needed.
    for (size_t k = taken->size() - 1; k-- > 0;) {
      int32_t i = (*taken)[k];
      Release(i, f, -1);
      if (Fits(j, f, nodes)) {
        state_[i] = kLive;
        taken->erase(taken->begin() + static_cast<std::ptrdiff_t>(k));
      } else {
        Release(i, f, +1);
      }
    }
    return true;
  }

 private:
  int64_t Gpus(int32_t run) const {
    int64_t g = 0;
    for (const Part& p : parts_[run]) g += p.gpus;
    return g;
  }
  void Release(int32_t run, FreeGpus& f, int32_t sign) const {
    for (const Part& p : parts_[run]) f.Add(p.node, sign * p.gpus);
  }
  const std::vector<EstimateRun>& runs_;
  enum State : uint8_t { kLive, kEnded, kTaken };
  std::vector<std::vector<Part>> parts_;  // of each run
  std::vector<State> state_;
  // A run from the time it ranks `rank` (a run ranks higher as its service grows).
  struct Entry {
    int32_t run;
    int64_t rank;
    TimeMs from;
  };
  std::vector<std::vector<Entry>> by_class_;       // rank descending
  std::vector<std::vector<int64_t>> gpus_before_;  // by class: GPUs of its first k runs
};

// The sweep: a cursor moving forward over the known ends of runs, each job in order placed at
// the first instant it fits (or, by preempting, at the cursor), its own end then known too.
class Sweep {
 public:
  Sweep(const std::vector<EstimateNode>& nodes, const std::vector<EstimateRelease>& releases,
        const std::vector<EstimateRun>& runs, TimeMs now)
      : nodes_(nodes), now_(now), cursor_(now), victims_(runs, releases, NodeCount()) {
    std::vector<int32_t> free(nodes.size(), 0);
    std::vector<int32_t> eventual(nodes.size(), 0);  // free once every known end has passed
    for (size_t n = 0; n < nodes.size(); ++n) {
      free[n] = eventual[n] = std::max(0, nodes[n].free_gpus);
    }
    AddReleases(releases, static_cast<int32_t>(runs.size()), &eventual);
    AddPreemptibleMoments(runs);
    for (int32_t e : eventual) max_gpus_ = std::max(max_gpus_, e);
    at_cursor_ = FreeGpus(std::move(free), max_gpus_, /*index_nodes=*/true);
    at_end_ = FreeGpus(std::move(eventual), max_gpus_, /*index_nodes=*/false);
    if (!ends_.empty() && std::get<0>(ends_.top()) <= now) Advance();
  }

  StartEstimate Estimate(const EstimateJob& j, bool not_now) {
    StartEstimate e;
    e.job = j.id;
    if (not_now && cursor_ <= now_) {
      if (ends_.empty()) return e;  // nothing it waits for is known to change
      Advance();
    }
    if (j.gpus_per_replica <= 0 || j.replicas <= 0) {
      e.start = cursor_;
      e.confidence = cursor_confidence_;
      return e;
    }
    if (!FitsAtCursor(j)) return e;
    e.start = cursor_;
    e.confidence = cursor_confidence_;
    Place(j, &e);
    return e;
  }

 private:
  // at, node (-1: a run becomes preemptible), GPUs, run (-1: none), what `at` rests on
  using Release = std::tuple<TimeMs, int32_t, int32_t, int32_t, EstimateConfidence>;

  int32_t NodeCount() const { return static_cast<int32_t>(nodes_.size()); }

  void AddReleases(const std::vector<EstimateRelease>& releases, int32_t run_count,
                   std::vector<int32_t>* eventual) {
    for (const EstimateRelease& r : releases) {
      if (r.at == kUnknownTime || r.node < 0 || r.node >= NodeCount()) continue;
      ends_.push({std::max(r.at, now_), r.node, r.gpus,
                  r.run >= 0 && r.run < run_count ? r.run : -1, r.confidence});
      (*eventual)[r.node] += r.gpus;
    }
  }

  // The moments a run becomes preemptible or falls to a rank a job may displace: the cursor
  // stops there too.
  void AddPreemptibleMoments(const std::vector<EstimateRun>& runs) {
    for (const EstimateRun& r : runs) {
      if (r.rank_class < 0) continue;
      if (r.preemptible_at > now_) {
        ends_.push({r.preemptible_at, -1, 0, -1, EstimateConfidence::kHigh});
      }
      for (auto [from, rank] : r.later_ranks) {
        if (from > now_) ends_.push({from, -1, 0, -1, EstimateConfidence::kHigh});
      }
    }
  }

  // To the next end, releasing everything that ends then.
  void Advance() {
    if (std::get<0>(ends_.top()) > cursor_) {
      cursor_ = std::get<0>(ends_.top());
      cursor_confidence_ = EstimateConfidence::kHigh;
    }
    while (!ends_.empty() && std::get<0>(ends_.top()) <= cursor_) {
      auto [at, node, gpus, run, confidence] = ends_.top();
      ends_.pop();
      if (run >= 0) {
        if (victims_.taken(run)) continue;  // the job that took it holds these GPUs
        victims_.End(run);
      }
      if (node >= 0) at_cursor_.Add(node, gpus);
      cursor_confidence_ = Weakest(cursor_confidence_, confidence);
    }
  }

  // Moves the cursor until `j` fits, by ends or by preempting at the cursor; false if it
  // never does as far as anything is known.
  bool FitsAtCursor(const EstimateJob& j) {
    // Never fits without preempting: only a preemption at the cursor may start it.
    const bool never = j.gpus_per_replica > max_gpus_ || !Fits(j, at_end_, nodes_);
    bool fits = !never && Fits(j, at_cursor_, nodes_);
    while (!fits) {
      if (victims_.Take(j, cursor_, at_cursor_, nodes_, &taken_)) {
        TakeVictims();
        return true;
      }
      if (never || ends_.empty()) return false;
      Advance();
      fits = Fits(j, at_cursor_, nodes_);
    }
    return true;
  }

  void TakeVictims() {
    // On the preemption as the sweep models it (without budgets, the victims' requeue not
    // estimated again): at best a prediction (philly-users: two thirds started late).
    cursor_confidence_ = Weakest(cursor_confidence_, EstimateConfidence::kMedium);
    // A victim without an end frees its GPUs now for good (then the job may hold them).
    for (int32_t run : taken_) {
      for (const Victims::Part& p : victims_.parts(run)) {
        if (!p.ends) at_end_.Add(p.node, p.gpus);
      }
    }
  }

  // Takes `j`'s GPUs at the cursor and adds its end.
  void Place(const EstimateJob& j, StartEstimate* e) {
    const EstimateConfidence end_confidence = Weakest(cursor_confidence_, j.duration_confidence);
    for (auto [n, replicas] : Choose(j, at_cursor_, nodes_)) {
      int32_t gpus = replicas * j.gpus_per_replica;
      at_cursor_.Add(n, -gpus);
      if (j.duration_ms > 0) {
        ends_.push({cursor_ + j.duration_ms, n, gpus, -1, end_confidence});
      } else {
        at_end_.Add(n, -gpus);
      }
      e->nodes.push_back(nodes_[n].name);
    }
    std::sort(e->nodes.begin(), e->nodes.end());
    e->nodes.erase(std::unique(e->nodes.begin(), e->nodes.end()), e->nodes.end());
  }

  const std::vector<EstimateNode>& nodes_;
  const TimeMs now_;
  TimeMs cursor_;
  // What the cursor's instant rests on: the weakest of the releases that brought it there.
  EstimateConfidence cursor_confidence_ = EstimateConfidence::kHigh;
  std::priority_queue<Release, std::vector<Release>, std::greater<>> ends_;
  Victims victims_;
  int32_t max_gpus_ = 0;
  FreeGpus at_cursor_;
  FreeGpus at_end_;
  std::vector<int32_t> taken_;  // scratch of Victims::Take
};

}  // namespace

std::vector<StartEstimate> SweepStarts(const std::vector<EstimateNode>& nodes,
                                       const std::vector<EstimateRelease>& releases,
                                       const std::vector<EstimateJob>& jobs, TimeMs now,
                                       const std::vector<EstimateRun>& runs, bool not_now) {
  Sweep sweep(nodes, releases, runs, now);
  std::vector<StartEstimate> out;
  out.reserve(jobs.size());
  for (const EstimateJob& j : jobs) out.push_back(sweep.Estimate(j, not_now));
  return out;
}

}  // namespace corral::sched
