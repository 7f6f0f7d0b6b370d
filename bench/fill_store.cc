// Fills a SQLite store with N jobs that went through a real lifecycle in the head's core
// (submitted, placed on one of 100 nodes, started, ended), as rows, for the head-restart
// benchmark (bench/head_restart.sh). A given fraction stays pending. --retire 1: then two days
// pass and the finished jobs are retired as the head retires them (JobsRetired).
//
//   corral_fill_store --db DIR/corral.db --jobs 100000 [--pending 0.05] [--retire 1]
#include <cstdio>
#include <string>

#include "head/durability.h"
#include "head/head_core.h"
#include "store/store.h"

using namespace corral;

int main(int argc, char** argv) {
  std::string db;
  int64_t jobs = 100000;
  double pending = 0.05;
  bool retire = false;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    if (k == "--db") db = argv[i + 1];
    if (k == "--jobs") jobs = std::stoll(argv[i + 1]);
    if (k == "--pending") pending = std::stod(argv[i + 1]);
    if (k == "--retire") retire = std::string(argv[i + 1]) == "1";
  }
  if (db.empty()) {
    std::fprintf(stderr,
                 "usage: corral_fill_store --db PATH|postgres://... [--jobs N] [--pending F]\n");
    return 2;
  }
  // A SQLite path, or any store URL (postgres://...) that `corral head --store` takes.
  auto store = db.rfind("postgres", 0) == 0 ? store::OpenStore(db, "") : store::OpenSqliteStore(db);
  if (!store.ok()) {
    std::fprintf(stderr, "%s\n", store.status().ToString().c_str());
    return 1;
  }
  head::HeadCore core({});
  TimeMs now = 1'700'000'000'000;
  core.Start(now);
  Caller join{Caller::Kind::kJoin, "join", Role::kUser, {}};
  for (int n = 0; n < 100; ++n) {
    RegisterRequest req;
    req.name = "node" + std::to_string(n);
    req.address = "10.0.0." + std::to_string(n) + ":7071";
    req.cpu_milli = 128000;
    req.memory_mb = 1 << 20;
    for (int g = 0; g < 8; ++g)
      req.gpus.push_back({g, req.name + "-" + std::to_string(g), "H100", 80000, g / 4, true});
    (void)core.Register(join, req, "secret-" + req.name, now);
  }
  int64_t finished = static_cast<int64_t>(jobs * (1 - pending));
  for (int64_t i = 0; i < jobs; ++i) {
    JobSpec spec;
    spec.name = "train-" + std::to_string(i % 97);
    spec.command = {"python3", "train.py", "--seed", std::to_string(i)};
    spec.env = {{"WANDB_PROJECT", "bench"}};
    spec.per_replica.gpu_milli = (1 + i % 4) * kGpuMilli;
    (void)core.Submit(Caller::User("user" + std::to_string(i % 40)), spec, "", now);
    if (i < finished) {
      core.Schedule(now);
      for (const auto& [name, node] : core.state().nodes) {
        for (const RunOrder& o : core.DesiredFor(name).runs) {
          SyncRequest req{
              name, node.agent_epoch, 0, 0, {{o.run_id, o.replica, false, 0, now, now + 60000}}};
          (void)core.Report(Caller::Node(name), req, now + 60000);
        }
      }
    }
    now += 1000;
    core.TakeOutput();
  }
  // Everything as snapshot rows, the way the head writes them.
  head::EditLog log({});
  std::vector<store::StateEdit> batch;
  log.MaybeSnapshot(core, /*force=*/true, &batch);
  Status st = (*store)->Commit(batch);
  if (st.ok() && retire) {
    batch.clear();
    for (int i = 0; i < 100; ++i) {  // a tick at a time, as the head would
      now += 2 * kDay;
      core.Tick(now);
      head::CoreOutput out = core.TakeOutput();
      log.Append(out.changes, core.state(), &batch);
    }
    st = (*store)->Commit(batch);
  }
  if (!st.ok()) {
    std::fprintf(stderr, "%s\n", st.ToString().c_str());
    return 1;
  }
  std::printf("wrote %lld jobs (%lld finished, %zu retired) at revision %llu\n",
              static_cast<long long>(jobs), static_cast<long long>(finished),
              core.state().retired.size(), static_cast<unsigned long long>(core.revision()));
  return 0;
}
