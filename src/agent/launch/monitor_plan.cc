// The monitor's plan as bytes, for a monitor the agent starts by exec (monitor.h): a sequence of
// fields, each "<decimal length>:<bytes>", in ChildPlan's order; arrays as a count, then items.
#include <cstdlib>
#include <string_view>

#include "agent/launch/monitor.h"

namespace corral::agent::internal {
namespace {

void Put(std::string& out, std::string_view field) {
  out += std::to_string(field.size());
  out += ':';
  out += field;
}
void PutInt(std::string& out, int64_t v) { Put(out, std::to_string(v)); }
void PutArray(std::string& out, const char* const* items, size_t n) {
  PutInt(out, static_cast<int64_t>(n));
  for (size_t i = 0; i < n; ++i) Put(out, items[i]);
}
size_t Count(const char* const* items) {
  size_t n = 0;
  while (items[n] != nullptr) ++n;
  return n;
}

struct Reader {
  std::string_view in;
  bool ok = true;
  std::string_view Next() {
    size_t colon = in.find(':');
    if (!ok || colon == std::string_view::npos || colon == 0 || colon > 9) {
      ok = false;
      return {};
    }
    size_t len = 0;
    for (char c : in.substr(0, colon)) {
      if (c < '0' || c > '9') ok = false;
      len = len * 10 + static_cast<size_t>(c - '0');
    }
    if (!ok || in.size() - colon - 1 < len) {
      ok = false;
      return {};
    }
    std::string_view field = in.substr(colon + 1, len);
    in.remove_prefix(colon + 1 + len);
    return field;
  }
  int64_t Int() {
    std::string s(Next());
    char* end = nullptr;
    int64_t v = std::strtoll(s.c_str(), &end, 10);
    if (s.empty() || end != s.c_str() + s.size()) ok = false;
    return v;
  }
  // `n` strings into `store`; their addresses once `store` stops growing (see DecodePlan).
  void Strings(int64_t n, std::vector<std::string>& store) {
    if (n < 0 || n > (1 << 20)) ok = false;
    for (int64_t i = 0; ok && i < n; ++i) store.emplace_back(Next());
  }
};

}  // namespace

std::string EncodePlan(const ChildPlan& p) {
  std::string out;
  Put(out, p.path);
  PutArray(out, p.argv, Count(p.argv));
  PutInt(out, p.task_count);
  for (int t = 0; t < p.task_count; ++t) {
    PutArray(out, p.tasks[t].envp, Count(p.tasks[t].envp));
    Put(out, p.tasks[t].out_path);
    Put(out, p.tasks[t].err_path);
  }
  PutInt(out, p.stop_signal);
  PutInt(out, p.grace_s);
  Put(out, p.workdir);
  PutInt(out, p.switch_user ? 1 : 0);
  PutInt(out, p.uid);
  PutInt(out, p.gid);
  PutInt(out, static_cast<int64_t>(p.group_count));
  for (size_t i = 0; i < p.group_count; ++i) PutInt(out, p.groups[i]);
  PutArray(out, p.cgroup_procs, static_cast<size_t>(p.cgroup_count));
  Put(out, p.record_path);
  Put(out, p.notify_path);
  Put(out, p.exec_error);
  Put(out, p.chdir_error);
  PutInt(out, p.max_fd);
  Put(out, p.lease_path != nullptr ? p.lease_path : "");
  PutInt(out, p.lease_ms);
  return out;
}

namespace {

// Where DecodePlan put each string of the plan in OwnedPlan::strings: indices, because the
// strings' addresses only stay put once every string is in.
struct PlanStringsAt {
  struct Task {
    size_t env_at, env_n, out, err;
  };
  size_t path = 0, argv_at = 0, argv_n = 0, workdir = 0, cgroups_at = 0, cgroups_n = 0;
  size_t record = 0, notify = 0, exec_error = 0, chdir_error = 0, lease_path = 0;
  std::vector<Task> tasks;
};

// One string field into `s`: its index.
size_t PlanString(Reader& r, std::vector<std::string>& s) {
  s.emplace_back(r.Next());
  return s.size() - 1;
}

// Reads the fields in ChildPlan's order: the strings into o->strings, the numbers into
// o->plan and o->groups. False on a malformed plan.
bool ReadPlanFields(Reader& r, OwnedPlan* o, PlanStringsAt* at) {
  std::vector<std::string>& s = o->strings;
  ChildPlan& p = o->plan;
  at->path = PlanString(r, s);
  at->argv_at = s.size();
  r.Strings(r.Int(), s);
  at->argv_n = s.size() - at->argv_at;
  const int64_t tasks = r.Int();
  if (tasks < 1 || tasks > 4096) return false;
  for (int64_t t = 0; t < tasks && r.ok; ++t) {
    PlanStringsAt::Task task{};
    task.env_at = s.size();
    r.Strings(r.Int(), s);
    task.env_n = s.size() - task.env_at;
    task.out = PlanString(r, s);
    task.err = PlanString(r, s);
    at->tasks.push_back(task);
  }
  p.stop_signal = static_cast<int>(r.Int());
  p.grace_s = static_cast<int>(r.Int());
  at->workdir = PlanString(r, s);
  p.switch_user = r.Int() != 0;
  p.uid = static_cast<uid_t>(r.Int());
  p.gid = static_cast<gid_t>(r.Int());
  const int64_t groups = r.Int();
  if (groups < 0 || groups > 65536) return false;
  for (int64_t i = 0; i < groups && r.ok; ++i) o->groups.push_back(static_cast<gid_t>(r.Int()));
  at->cgroups_at = s.size();
  r.Strings(r.Int(), s);
  at->cgroups_n = s.size() - at->cgroups_at;
  at->record = PlanString(r, s);
  at->notify = PlanString(r, s);
  at->exec_error = PlanString(r, s);
  at->chdir_error = PlanString(r, s);
  p.max_fd = static_cast<int>(r.Int());
  at->lease_path = PlanString(r, s);
  p.lease_ms = r.Int();
  return r.ok && r.in.empty() && at->argv_n > 0;
}

// Points the plan at its strings and arrays, now that they stay put.
void BindPlan(const PlanStringsAt& at, OwnedPlan* o) {
  std::vector<std::string>& s = o->strings;
  ChildPlan& p = o->plan;
  auto array = [&](size_t from, size_t n) {
    std::vector<char*>& a = o->arrays.emplace_back();
    for (size_t i = 0; i < n; ++i) a.push_back(s[from + i].data());
    a.push_back(nullptr);
    return o->arrays.size() - 1;
  };
  o->arrays.reserve(2 + at.tasks.size());  // stable addresses for the pointers taken below
  const size_t argv = array(at.argv_at, at.argv_n);
  const size_t cgroups = array(at.cgroups_at, at.cgroups_n);
  for (const PlanStringsAt::Task& t : at.tasks) {
    const size_t env = array(t.env_at, t.env_n);
    o->tasks.push_back({o->arrays[env].data(), s[t.out].c_str(), s[t.err].c_str()});
  }
  o->task_pids.assign(at.tasks.size(), 0);
  o->report.assign(24 * (at.tasks.size() + 3), '\0');
  p.path = s[at.path].c_str();
  p.argv = o->arrays[argv].data();
  p.tasks = o->tasks.data();
  p.task_count = static_cast<int>(at.tasks.size());
  p.task_pids = o->task_pids.data();
  p.report = o->report.data();
  p.report_cap = o->report.size();
  p.workdir = s[at.workdir].c_str();
  p.groups = o->groups.data();
  p.group_count = o->groups.size();
  p.cgroup_procs = o->arrays[cgroups].data();
  p.cgroup_count = static_cast<int>(at.cgroups_n);
  p.record_path = s[at.record].c_str();
  p.notify_path = s[at.notify].c_str();
  p.exec_error = s[at.exec_error].c_str();
  p.chdir_error = s[at.chdir_error].c_str();
  p.lease_path = s[at.lease_path].empty() ? nullptr : s[at.lease_path].c_str();
  if (p.lease_path == nullptr) p.lease_ms = 0;
}

}  // namespace

bool DecodePlan(const std::string& bytes, OwnedPlan* o) {
  Reader r{bytes};
  PlanStringsAt at;
  if (!ReadPlanFields(r, o, &at)) return false;
  BindPlan(at, o);
  return true;
}

}  // namespace corral::agent::internal
