// The store on a pg_auto_failover formation (testing/pg_auto_failover.h: a monitor, a primary,
// two standbys on loopback, fsync on): the latency of a head's commit with synchronous
// replication (number_sync_standbys 1: ANY 1 of the two standbys flushes it) against
// asynchronous (no standby in the quorum), side by side in rounds so that the machine's load
// falls on both alike; then the write unavailability of database failovers: the primary is
// SIGKILLed while a writer commits, and the writer does what a head does when its commit
// fails (opens the store again, takes the lead, whose term commit must replicate) until a
// commit succeeds.
//
//   corral_pg_failover_bench [--seconds 10] [--rounds 3] [--failovers 3]
//                            [--timeouts test|default|layout]
//
// Root (the servers run as the postgres user). --timeouts picks the monitor's: the tests'
// short ones, pg_auto_failover's defaults, or those docs/reliability.md's layout gives.
#include <signal.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <thread>
#include <vector>

#include "store/postgres_store.h"
#include "testing/pg_auto_failover.h"

namespace corral {
namespace {

using Clock = std::chrono::steady_clock;
using testing::PgAutoFailover;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// One of a head's commits: a job row and its change.
std::vector<store::StateEdit> HeadCommit(uint64_t n) {
  Job j;
  j.id = n;
  j.owner = "bench";
  j.spec.command = {"/bin/sh", "-c", std::string(1200, 'x')};
  store::ChangeRecord c{n, std::string(800, 'c')};
  return {store::PutJob{j}, store::AppendChange{c}};
}

// A store that leads, as a head opens it (the startup check, then its term).
Result<std::unique_ptr<store::PostgresStore>> OpenLeading(const std::string& url, bool sync) {
  store::StoreOptions o;
  if (!sync) o.sync_standby = store::StoreOptions::SyncStandby::kSkip;
  auto s = store::OpenPostgresStore(url, o);
  if (!s.ok()) return s.status();
  auto term = (*s)->TryLead();
  if (!term.ok()) return term.status();
  if (!term->has_value()) return Unavailable("another session leads");
  return std::move(*s);
}

void Report(const char* label, std::vector<double> ms) {
  if (ms.empty()) {
    std::printf("%-34s no commits\n", label);
    return;
  }
  std::sort(ms.begin(), ms.end());
  double sum = 0;
  for (double v : ms) sum += v;
  std::printf("%-34s %6zu commits  mean %6.2f ms  p50 %6.2f ms  p99 %7.2f ms\n", label, ms.size(),
              sum / static_cast<double>(ms.size()), ms[ms.size() / 2],
              ms[std::min(ms.size() - 1, ms.size() * 99 / 100)]);
}

Status MeasureLatency(PgAutoFailover& pg, const std::string& url, int seconds, int rounds,
                      uint64_t* next_id) {
  std::vector<double> sync_ms, async_ms;
  for (int r = 0; r < rounds; ++r) {
    for (bool sync : {true, false}) {
      CORRAL_RETURN_IF_ERROR(pg.SetSynchronous(sync));
      auto s = OpenLeading(url, sync);
      if (!s.ok()) return s.status();
      auto end = Clock::now() + std::chrono::seconds(seconds);
      while (Clock::now() < end) {
        auto t0 = Clock::now();
        CORRAL_RETURN_IF_ERROR((*s)->Commit(HeadCommit((*next_id)++)));
        (sync ? sync_ms : async_ms).push_back(Seconds(Clock::now() - t0) * 1000);
      }
    }
  }
  CORRAL_RETURN_IF_ERROR(pg.SetSynchronous(true));
  Report("synchronous (ANY 1 of 2 standbys)", sync_ms);
  Report("asynchronous (no quorum standby)", async_ms);
  return Status::Ok();
}

// One failover: seconds until the monitor promoted a standby and until a commit succeeded.
Status MeasureFailover(PgAutoFailover& pg, const std::string& url, uint64_t* next_id) {
  auto s = OpenLeading(url, true);
  if (!s.ok()) return s.status();
  for (int i = 0; i < 20; ++i) CORRAL_RETURN_IF_ERROR((*s)->Commit(HeadCommit((*next_id)++)));
  int primary = pg.Primary();
  CORRAL_RETURN_IF_ERROR(pg.Kill(primary));
  auto killed = Clock::now();
  double promoted_s = -1;
  std::thread watch([&] {
    auto next = pg.WaitFailover(primary, 600000);
    if (next.ok()) promoted_s = Seconds(Clock::now() - killed);
  });
  // As a head: a failed commit ends this store; a new one opens and leads once it can.
  int attempts = 0;
  while (!(*s)->Commit(HeadCommit(*next_id)).ok()) {
    ++attempts;
    s->reset();
    while (!*s) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      auto reopened = OpenLeading(url, true);
      if (reopened.ok()) *s = std::move(*reopened);
      if (Seconds(Clock::now() - killed) > 600) return Internal("no commit for 10 minutes");
    }
  }
  ++*next_id;
  double writable_s = Seconds(Clock::now() - killed);
  watch.join();
  std::printf("failover: standby promoted after %.1f s, first commit after %.1f s\n", promoted_s,
              writable_s);
  s->reset();
  CORRAL_RETURN_IF_ERROR(pg.Restart(primary));
  return pg.WaitHealthy(300000);
}

// docs/reliability.md's layout: a primary that stops answering fails its health checks within
// about 8 s and is called unhealthy after 10 s without a report; a standby is promoted 10 s
// after it was asked to demote. That keeps a failover inside the agents' 40 s lease.
std::vector<std::string> LayoutTimeouts() {
  return {"pgautofailover.health_check_period = 2000",
          "pgautofailover.health_check_timeout = 2000",
          "pgautofailover.health_check_max_retries = 2",
          "pgautofailover.health_check_retry_delay = 1000",
          "pgautofailover.node_considered_unhealthy_timeout = 10000",
          "pgautofailover.primary_demote_timeout = 10000"};
}

int Main(int argc, char** argv) {
  CLI::App app{"commit latency and failover time of the store on pg_auto_failover"};
  int seconds = 10, rounds = 3, failovers = 3;
  std::string timeouts = "test";
  app.add_option("--seconds", seconds, "each mode's time per round");
  app.add_option("--rounds", rounds, "rounds of both modes");
  app.add_option("--failovers", failovers, "primary SIGKILLs to time");
  app.add_option("--timeouts", timeouts, "the monitor's: test, default or layout")
      ->check(CLI::IsMember({"test", "default", "layout"}));
  CLI11_PARSE(app, argc, argv);
  std::vector<std::string> settings;  // default: none
  if (timeouts == "test") settings = PgAutoFailover::TestTimeouts();
  if (timeouts == "layout") settings = LayoutTimeouts();
  auto pg = PgAutoFailover::Start("bench", settings);
  if (!pg.ok()) {
    std::cerr << "corral_pg_failover_bench: " << pg.status().ToString() << "\n";
    return 1;
  }
  std::string url = (*pg)->Url("bench");
  uint64_t next_id = 1;
  if (Status st = MeasureLatency(**pg, url, seconds, rounds, &next_id); !st.ok()) {
    std::cerr << "corral_pg_failover_bench: " << st.ToString() << "\n";
    return 1;
  }
  for (int i = 0; i < failovers; ++i) {
    if (Status st = MeasureFailover(**pg, url, &next_id); !st.ok()) {
      std::cerr << "corral_pg_failover_bench: " << st.ToString() << "\n";
      return 1;
    }
  }
  return 0;
}

}  // namespace
}  // namespace corral

int main(int argc, char** argv) { return corral::Main(argc, argv); }
