// The node's dataset cache with real files, locks, threads and processes: one copy per
// version, one fetch when several race for it, no partial entry after a SIGKILL mid-fetch
// (the next use fetches again), eviction of whole unpinned datasets only, a copy whose content
// changed refused, and the stager's note and environment.
#include "agent/data/dataset_cache.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <thread>

#include "agent/data/dataset_stager.h"
#include "agent/data/source_gate.h"
#include "agent/data/stage_out_copy.h"
#include "agent/node/fake_node_env.h"
#include "agent/test_util.h"
#include "core/dataset_files.h"
#include "core/dataset_source.h"
#include "net/http_server.h"

namespace corral::agent {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

// A source directory of `files` files of `size` bytes each (in two subdirectories), and its
// reference as the head would resolve it.
DatasetRef MakeSource(const std::string& dir, const std::string& name, int files, int size) {
  fs::create_directories(dir + "/a");
  fs::create_directories(dir + "/b");
  for (int i = 0; i < files; ++i) {
    std::ofstream out(dir + (i % 2 ? "/a/" : "/b/") + "f" + std::to_string(i));
    out << std::string(size, static_cast<char>('a' + i % 26)) << name;
  }
  auto m = ScanDataset(dir);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  DatasetRef r;
  r.name = name;
  r.source = dir;
  r.digest = m->digest;
  r.files = static_cast<int64_t>(m->files.size());
  r.bytes = m->bytes;
  return r;
}

int Fetches(const std::string& cache) {
  std::ifstream in(cache + "/fetches");
  int n = 0;
  for (std::string line; std::getline(in, line);) ++n;
  return n;
}

TEST(DatasetCache, OneCopyServesEveryUseAndTheCopyIsTheSource) {
  TempDir tmp;
  DatasetRef ref = MakeSource(tmp.path() + "/src", "imagenet", 20, 1000);
  DatasetCache cache({tmp.path() + "/cache"}, RealNodeEnv().clock);
  auto first = cache.Acquire(ref, nullptr);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_TRUE(first->fetched);
  auto second = cache.Acquire(ref, nullptr);
  ASSERT_TRUE(second.ok());
  EXPECT_FALSE(second->fetched);
  EXPECT_EQ(first->path, second->path);
  EXPECT_EQ(Fetches(tmp.path() + "/cache"), 1);
  auto copy = ScanDataset(first->path);
  ASSERT_TRUE(copy.ok());
  EXPECT_EQ(copy->digest, ref.digest);
  EXPECT_EQ(cache.Usage().digests, std::vector<std::string>{ref.digest});
  EXPECT_EQ(cache.Usage().bytes, ref.bytes);
  close(first->use_fd);
  close(second->use_fd);
}

TEST(DatasetCache, RacingUsesCauseOneFetch) {
  TempDir tmp;
  DatasetRef ref = MakeSource(tmp.path() + "/src", "cifar", 40, 20000);
  DatasetCache cache({tmp.path() + "/cache"}, RealNodeEnv().clock);
  std::atomic<int> fetched{0}, ok{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&] {
      auto s = cache.Acquire(ref, nullptr, [](int64_t) {
        std::this_thread::sleep_for(std::chrono::milliseconds(2));  // the others catch up
      });
      if (s.ok()) {
        ++ok;
        fetched += s->fetched ? 1 : 0;
        close(s->use_fd);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(ok, 4);
  EXPECT_EQ(fetched, 1);
  EXPECT_EQ(Fetches(tmp.path() + "/cache"), 1);
}

TEST(DatasetCache, AFetchKilledMidwayLeavesNoEntryAndTheNextUseFetchesAgain) {
  TempDir tmp;
  DatasetRef ref = MakeSource(tmp.path() + "/src", "big", 8, 6 << 20);  // 48 MiB
  const std::string dir = tmp.path() + "/cache";
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {  // a fetcher that stops for good once it has copied something
    DatasetCache cache({dir}, RealNodeEnv().clock);
    (void)cache.Acquire(ref, nullptr, [&](int64_t bytes) {
      if (bytes >= (4 << 20)) {
        (void)!write(ready[1], "x", 1);
        pause();
      }
    });
    _exit(0);
  }
  close(ready[1]);
  char c;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  close(ready[0]);
  const std::string data = dir + "/data/" + DigestHex(ref.digest);
  EXPECT_FALSE(fs::exists(data));
  EXPECT_FALSE(fs::is_empty(dir + "/tmp")) << "the fetch under way writes in tmp/";
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_FALSE(fs::exists(data)) << "no partial entry";
  DatasetCache cache({dir}, RealNodeEnv().clock);
  cache.CleanInterrupted();
  EXPECT_TRUE(fs::is_empty(dir + "/tmp")) << "what the dead fetch left is gone";
  EXPECT_TRUE(cache.Usage().digests.empty());
  auto s = cache.Acquire(ref, nullptr);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_TRUE(s->fetched);
  EXPECT_EQ(ScanDataset(s->path)->digest, ref.digest);
  close(s->use_fd);
}

TEST(DatasetCache, EvictionTakesWholeUnpinnedDatasetsOnly) {
  TempDir tmp;
  DatasetRef a = MakeSource(tmp.path() + "/a", "a", 4, 100000);
  DatasetRef b = MakeSource(tmp.path() + "/b", "b", 4, 100000);
  DatasetRef c = MakeSource(tmp.path() + "/c", "c", 4, 100000);
  DatasetCacheConfig config{tmp.path() + "/cache"};
  config.limit_bytes = a.bytes;  // over the high watermark even with one alone
  DatasetCache cache(config, RealNodeEnv().clock);
  auto pinned = cache.Acquire(a, nullptr);  // a run uses it throughout
  ASSERT_TRUE(pinned.ok());
  for (const DatasetRef* r : {&b, &c}) {
    auto s = cache.Acquire(*r, nullptr);
    ASSERT_TRUE(s.ok());
    close(s->use_fd);  // that run is over
  }
  EXPECT_EQ(cache.Usage().datasets, 3);
  EXPECT_EQ(cache.Evict(), 2);
  EXPECT_EQ(cache.Usage().digests, std::vector<std::string>{a.digest});
  EXPECT_TRUE(fs::exists(pinned->path + "/b/f0"));
  EXPECT_EQ(cache.Evict(), 0) << "the pinned one stays, even over the watermark";
  close(pinned->use_fd);
  EXPECT_EQ(cache.Evict(), 1);
  EXPECT_TRUE(cache.Usage().digests.empty());
}

TEST(DatasetCache, ASourceChangedSinceItWasAddedIsRefusedNamingIt) {
  TempDir tmp;
  DatasetRef ref = MakeSource(tmp.path() + "/src", "moving", 3, 10);
  std::ofstream(tmp.path() + "/src/a/new") << "added later";
  DatasetCache cache({tmp.path() + "/cache"}, RealNodeEnv().clock);
  auto s = cache.Acquire(ref, nullptr);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("dataset moving from " + ref.source), std::string::npos)
      << s.status().message();
  EXPECT_NE(s.status().message().find("changed since it was added"), std::string::npos);
  EXPECT_TRUE(cache.Usage().digests.empty());
  EXPECT_TRUE(fs::is_empty(tmp.path() + "/cache/tmp"));
  DatasetRef missing = ref;
  missing.source = tmp.path() + "/nowhere";
  s = cache.Acquire(missing, nullptr);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("dataset moving from " + missing.source), std::string::npos);
}

// The directory `dir` packed by the system's tar into `archive` (gzip for .tgz): a reference to
// the archive with the manifest `corral datasets add` would make.
DatasetRef PackSource(const DatasetRef& dir, const std::string& archive) {
  const std::string flags = archive.ends_with(".tgz") ? "-czf" : "-cf";
  EXPECT_EQ(std::system(("tar -C " + dir.source + " " + flags + " " + archive + " .").c_str()), 0);
  auto m = ScanSource(archive, "/tmp");
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  DatasetRef r = dir;
  r.source = archive;
  r.digest = m->digest;
  return r;
}

TEST(DatasetCache, AnArchiveIsUnpackedCheckedAndKeepsItsPermissions) {
  TempDir tmp;
  DatasetRef dir = MakeSource(tmp.path() + "/src", "packed", 30, 5000);
  DatasetRef ref = PackSource(dir, tmp.path() + "/packed.tgz");
  EXPECT_EQ(ref.digest, dir.digest);  // the same content, the same version
  chmod(ref.source.c_str(), 0640);
  DatasetCache cache({tmp.path() + "/cache"}, RealNodeEnv().clock);
  auto got = cache.Acquire(ref, nullptr);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_TRUE(got->fetched);
  EXPECT_EQ(got->source_bytes, static_cast<int64_t>(fs::file_size(ref.source)));
  auto copy = ScanDataset(got->path);
  ASSERT_TRUE(copy.ok());
  EXPECT_EQ(copy->digest, ref.digest);
  EXPECT_EQ(fs::status(got->path + "/a/f1").permissions(),
            fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  close(got->use_fd);

  // Repacked with a file changed: refused naming the dataset and the archive, nothing kept.
  std::ofstream(dir.source + "/a/f1") << "changed";
  DatasetRef stale = ref;
  PackSource(dir, ref.source);
  DatasetCache fresh({tmp.path() + "/cache2"}, RealNodeEnv().clock);
  auto s = fresh.Acquire(stale, nullptr);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("dataset packed from " + ref.source), std::string::npos)
      << s.status().message();
  EXPECT_NE(s.status().message().find("changed since it was added"), std::string::npos);
  EXPECT_TRUE(fresh.Usage().digests.empty());
  EXPECT_TRUE(fs::is_empty(tmp.path() + "/cache2/tmp"));
}

TEST(DatasetCache, AnArchiveWithALinkOutIsRefusedAndLeavesNothing) {
  TempDir tmp;
  fs::create_directories(tmp.path() + "/evil");
  std::ofstream(tmp.path() + "/evil/ok") << "ok";
  fs::create_symlink("/etc/passwd", tmp.path() + "/evil/passwd");
  ASSERT_EQ(
      std::system(("tar -C " + tmp.path() + "/evil -cf " + tmp.path() + "/evil.tar .").c_str()), 0);
  DatasetRef ref;
  ref.name = "evil";
  ref.source = tmp.path() + "/evil.tar";
  ref.digest = "sha256:" + std::string(64, '0');
  DatasetCache cache({tmp.path() + "/cache"}, RealNodeEnv().clock);
  auto s = cache.Acquire(ref, nullptr);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("'./passwd' is a symbolic link"), std::string::npos)
      << s.status().message();
  EXPECT_TRUE(cache.Usage().digests.empty());
  EXPECT_TRUE(fs::is_empty(tmp.path() + "/cache/tmp"));
}

// An archive served over real HTTP on loopback; `served` counts the bytes sent.
class ArchiveServer {
 public:
  explicit ArchiveServer(const std::string& file)
      : server_([this, file](net::HttpRequest req, net::Responder respond) {
          net::HttpResponse r;
          r.content_type = "application/octet-stream";
          std::ifstream in(file, std::ios::binary);
          if (req.path != "/data/set.tgz" || !in) {
            r.status = 404;
          } else {
            r.body.assign(std::istreambuf_iterator<char>(in), {});
            served_ += static_cast<int64_t>(r.body.size());
          }
          respond(std::move(r));
        }) {
    port_ = *server_.Listen("127.0.0.1", 0);
    server_.Start();
  }
  std::string Url(const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }
  int64_t served() const { return served_; }

 private:
  std::atomic<int64_t> served_{0};
  net::HttpServer server_;
  int port_ = 0;
};

TEST(DatasetCache, AUrlIsDownloadedCheckedPublishedAndAChangedOneRefused) {
  TempDir tmp;
  DatasetRef dir = MakeSource(tmp.path() + "/src", "remote", 40, 3000);
  const std::string archive = tmp.path() + "/set.tgz";
  PackSource(dir, archive);
  ArchiveServer server(archive);
  DatasetRef ref = dir;
  ref.source = server.Url("/data/set.tgz");
  auto m = ScanSource(ref.source, tmp.path());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->digest, dir.digest);
  const int64_t once = server.served();
  EXPECT_EQ(once, static_cast<int64_t>(fs::file_size(archive)));

  DatasetCache cache({tmp.path() + "/cache"}, RealNodeEnv().clock);
  std::vector<int64_t> progress;
  auto got = cache.Acquire(ref, nullptr, [&](int64_t n) { progress.push_back(n); });
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_TRUE(got->fetched);
  EXPECT_EQ(got->source_bytes, once);
  EXPECT_EQ(server.served(), 2 * once);
  ASSERT_FALSE(progress.empty());
  EXPECT_EQ(progress.back(), ref.bytes);
  auto copy = ScanDataset(got->path);
  ASSERT_TRUE(copy.ok());
  EXPECT_EQ(copy->digest, ref.digest);
  close(got->use_fd);
  auto again = cache.Acquire(ref, nullptr);  // cached: the source is not read
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->fetched);
  EXPECT_EQ(server.served(), 2 * once);
  close(again->use_fd);
  EXPECT_TRUE(fs::is_empty(tmp.path() + "/cache/tmp"));

  // The archive behind the URL changed: refused naming the dataset and the URL.
  std::ofstream(dir.source + "/b/f0") << "changed";
  fs::remove(archive);
  PackSource(dir, archive);
  DatasetCache fresh({tmp.path() + "/cache2"}, RealNodeEnv().clock);
  // What a download killed midway leaves (its archive and its half-unpacked copy) goes at the
  // agent's next start.
  const std::string dead = tmp.path() + "/cache2/tmp/" + DigestHex(ref.digest) + ".1.2";
  fs::create_directories(dead + "/a");
  std::ofstream(dead + ".download") << "half an archive";
  fresh.CleanInterrupted();
  EXPECT_TRUE(fs::is_empty(tmp.path() + "/cache2/tmp"));
  auto s = fresh.Acquire(ref, nullptr);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("dataset remote from " + ref.source), std::string::npos)
      << s.status().message();
  EXPECT_NE(s.status().message().find("changed since it was added"), std::string::npos);
  DatasetRef gone = ref;
  gone.source = server.Url("/data/gone.tgz");
  s = fresh.Acquire(gone, nullptr);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("404"), std::string::npos) << s.status().message();
  EXPECT_TRUE(fresh.Usage().digests.empty());
  EXPECT_TRUE(fs::is_empty(tmp.path() + "/cache2/tmp"));
}

TEST(DatasetStager, StagesThenGivesTheOrderItsDatasetsPlaces) {
  TempDir tmp;
  DatasetRef ref = MakeSource(tmp.path() + "/src", "image-net", 6, 1000);
  ref.mount = "/data/in";
  DatasetStager stager({tmp.path() + "/cache"}, /*as_owner=*/false, "node7", RealNodeEnv().clock);
  RunOrder order = testing::ShellOrder("5.1", "true");
  order.datasets = {ref};
  stager.Start(order);
  std::optional<Result<RunOrder>> staged;
  ASSERT_TRUE(testing::WaitFor([&] { return (staged = stager.Take({"5.1", 0})).has_value(); }));
  ASSERT_TRUE(staged->ok()) << staged->status().ToString();
  const std::string path = tmp.path() + "/cache/data/" + DigestHex(ref.digest);
  EXPECT_EQ((*staged)->local_env.at("CORRAL_DATASET_IMAGE_NET"), path);
  EXPECT_EQ(stager.Held(), std::vector<std::string>{ref.digest});
  // In a container the dataset is mounted read-only at its mount point, which the job is told.
  RunOrder in_container = order;
  in_container.container.image = "registry.example/train:1";
  PlaceDatasets({path}, &in_container);
  ASSERT_EQ(in_container.container.mounts.size(), 1u);
  EXPECT_EQ(in_container.container.mounts[0], (ContainerMount{path, "/data/in", true}));
  EXPECT_EQ(in_container.local_env.at("CORRAL_DATASET_IMAGE_NET"), "/data/in");
  stager.Release({"5.1", 0});
}

// The value of a series in Prometheus text ("" when absent).
std::string Series(const std::string& text, const std::string& series) {
  size_t at = text.find("\n" + series + " ");
  if (at == std::string::npos) return "";
  at += series.size() + 2;
  return text.substr(at, text.find('\n', at) - at);
}

std::optional<Result<RunOrder>> StageAndWait(DatasetStager& stager, const std::string& run_id,
                                             const DatasetRef& ref) {
  RunOrder order = testing::ShellOrder(run_id, "true");
  order.datasets = {ref};
  stager.Start(order);
  std::optional<Result<RunOrder>> staged;
  EXPECT_TRUE(testing::WaitFor([&] { return (staged = stager.Take({run_id, 0})).has_value(); }));
  return staged;
}

TEST(DatasetStager, MetricsCountHitsFetchesBytesFailuresAndEvictions) {
  TempDir tmp;
  DatasetRef a = MakeSource(tmp.path() + "/a", "a", 4, 10000);
  DatasetRef b = MakeSource(tmp.path() + "/b", "b", 4, 10000);
  DatasetCacheConfig config{tmp.path() + "/cache"};
  config.limit_bytes = a.bytes + b.bytes / 2;  // both together are over the high watermark
  DatasetStager stager(config, /*as_owner=*/false, "node7", RealNodeEnv().clock);
  const std::string none = stager.RenderMetrics();
  EXPECT_EQ(Series(none, "corral_dataset_stage_ins_total{result=\"cached\"}"), "0");
  EXPECT_EQ(Series(none, "corral_dataset_cache_bytes"), "0");

  ASSERT_TRUE(StageAndWait(stager, "1.1", a)->ok());
  ASSERT_TRUE(StageAndWait(stager, "2.1", a)->ok());  // the same version: a hit
  DatasetRef gone = b;
  gone.source = tmp.path() + "/nowhere";
  EXPECT_FALSE(StageAndWait(stager, "3.1", gone)->ok());
  std::string text = stager.RenderMetrics();
  EXPECT_EQ(Series(text, "corral_dataset_stage_ins_total{result=\"fetched\"}"), "1");
  EXPECT_EQ(Series(text, "corral_dataset_stage_ins_total{result=\"cached\"}"), "1");
  EXPECT_EQ(Series(text, "corral_dataset_stage_ins_total{result=\"failed\"}"), "1");
  EXPECT_EQ(Series(text, "corral_dataset_source_read_bytes_total{source=\"" + a.source + "\"}"),
            std::to_string(a.bytes));
  EXPECT_EQ(Series(text, "corral_dataset_fetch_seconds_count"), "1");
  EXPECT_EQ(Series(text, "corral_dataset_cache_datasets"), "1");
  EXPECT_EQ(Series(text, "corral_dataset_cache_limit_bytes"), std::to_string(config.limit_bytes));

  // Both runs of a end; b comes in over the watermark, and a (unpinned) goes.
  stager.Release({"1.1", 0});
  stager.Release({"2.1", 0});
  ASSERT_TRUE(StageAndWait(stager, "4.1", b)->ok());
  EXPECT_EQ(stager.Held(), std::vector<std::string>{b.digest});
  text = stager.RenderMetrics();
  EXPECT_EQ(Series(text, "corral_dataset_evictions_total"), "1");
  EXPECT_EQ(Series(text, "corral_dataset_cache_datasets"), "1");
  stager.Release({"4.1", 0});
}

// A fetch ahead for a job reserved here: fetched into the cache and left unpinned (evictable),
// reported while it goes on and not after; a job whose data would not fit under the high
// watermark is not fetched, and says so; a run then staged with the data finds it cached (a
// hit), and the fetch ahead was no stage-in of its own.
TEST(DatasetStager, FetchesAheadUnpinnedOnlyIntoFreeSpace) {
  TempDir tmp;
  DatasetRef a = MakeSource(tmp.path() + "/a", "a", 4, 10000);
  DatasetRef big = MakeSource(tmp.path() + "/big", "big", 4, 30000);
  DatasetCacheConfig config{tmp.path() + "/cache"};
  config.limit_bytes = a.bytes + big.bytes / 2;  // a fits, then big does not
  DatasetStager stager(config, /*as_owner=*/false, "node7", RealNodeEnv().clock);
  stager.Prefetch({PrefetchOrder{7, "", {a}}});
  ASSERT_TRUE(
      testing::WaitFor([&] { return stager.Held() == std::vector<std::string>{a.digest}; }));
  ASSERT_TRUE(testing::WaitFor([&] { return stager.Prefetching().empty(); }));
  std::string text = stager.RenderMetrics();
  EXPECT_EQ(Series(text, "corral_dataset_stage_ins_total{result=\"fetched\"}"), "0");
  EXPECT_EQ(Series(text, "corral_dataset_source_read_bytes_total{source=\"" + a.source + "\"}"),
            std::to_string(a.bytes));
  // Not pinned: an exclusive lock on its use file is free (eviction takes it so).
  const std::string use = tmp.path() + "/cache/data/" + DigestHex(a.digest) + ".use";
  const int fd = open(use.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(flock(fd, LOCK_EX | LOCK_NB), 0) << "a fetch ahead pins nothing";
  close(fd);

  stager.Prefetch({PrefetchOrder{7, "", {a}}, PrefetchOrder{8, "", {big}}});
  std::vector<PrefetchReport> reports = stager.Prefetching();
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].job_id, 8u);
  EXPECT_NE(reports[0].note.find("not fetching big ahead on node7"), std::string::npos)
      << reports[0].note;
  EXPECT_EQ(stager.Held(), std::vector<std::string>{a.digest});
  stager.Prefetch({});  // no longer asked: forgotten
  EXPECT_TRUE(stager.Prefetching().empty());

  ASSERT_TRUE(StageAndWait(stager, "7.1", a)->ok());
  text = stager.RenderMetrics();
  EXPECT_EQ(Series(text, "corral_dataset_stage_ins_total{result=\"cached\"}"), "1");
  EXPECT_EQ(Series(text, "corral_dataset_stage_ins_total{result=\"fetched\"}"), "0");
  EXPECT_EQ(Fetches(tmp.path() + "/cache"), 1);
  stager.Release({"7.1", 0});
}

// The gate of a source: with one fetch at a time, three threads go one after another in the
// order they came, the later ones told their place in line.
TEST(SourceGate, OneFetchAtATimeInOrder) {
  SourceGate gate(SourceGateConfig{1, 4 << 20}, RealNodeEnv().clock);
  std::atomic<int> inside{0}, most{0};
  std::mutex mu;
  std::vector<int> order;
  std::vector<int32_t> places;
  struct Held {
    SourceGate::Slot slot;
  };
  auto first = std::unique_ptr<Held>(new Held{gate.Enter("s", nullptr)});  // holds it
  std::vector<std::thread> threads;
  for (int i = 0; i < 3; ++i) {
    threads.emplace_back([&, i] {
      SourceGate::Slot slot = gate.Enter("s", [&](int32_t place) {
        std::lock_guard lock(mu);
        places.push_back(place);
      });
      most = std::max(most.load(), ++inside);
      {
        std::lock_guard lock(mu);
        order.push_back(i);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      --inside;
    });
    // Each in line before the next comes: its place is told once it waits.
    ASSERT_TRUE(testing::WaitFor([&] {
      std::lock_guard lock(mu);
      return static_cast<int>(places.size()) > i;
    }));
  }
  {
    std::lock_guard lock(mu);
    EXPECT_EQ(places, (std::vector<int32_t>{1, 2, 3}));
  }
  first.reset();
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(most.load(), 1);
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2}));
  // Another source has its own line: it goes at once.
  {
    SourceGate::Slot other = gate.Enter("t", [](int32_t) { ADD_FAILURE() << "queued"; });
  }
}

// The rate holds all reads of a source together, on the agent's clock: each MiB at 4 MiB/s is
// let through when its quarter of a second has passed, not a millisecond before; another
// source is not held by it.
TEST(SourceGate, ReadsOfASourceGoNoFasterThanItsRate) {
  testing::FakeNodeClock clock;
  SourceGate gate(SourceGateConfig{1, 4 << 20}, clock);
  std::atomic<int> paced{0};
  std::thread reader([&] {
    for (int i = 0; i < 2; ++i) {
      gate.Pace("s", 1 << 20);
      ++paced;
    }
  });
  for (int mib = 1; mib <= 2; ++mib) {
    ASSERT_TRUE(clock.BlockUntilWaiting(1));
    gate.Pace("t", 1 << 10);  // another source's bucket is its own: this returns at once
    clock.Advance(249);
    ASSERT_TRUE(clock.BlockUntilWaiting(1));
    EXPECT_EQ(paced.load(), mib - 1) << "MiB " << mib << " a millisecond early";
    clock.Advance(1);
    ASSERT_TRUE(testing::WaitFor([&] { return paced.load() == mib; }));
  }
  reader.join();
}
// The head's cap on one fetch (its share of a cluster-wide budget) paces that fetch alone, on a
// bucket of its own, even where the node sets no rate of its own.
TEST(SourceGate, AFetchGoesNoFasterThanTheHeadsCapOnIt) {
  testing::FakeNodeClock clock;
  SourceGate gate(SourceGateConfig{0, 0}, clock);
  std::atomic<int> paced{0};
  std::thread reader([&] {
    double bucket = 0;
    for (int i = 0; i < 2; ++i) {
      gate.PaceFetch(&bucket, 1 << 20, 2 << 20);
      ++paced;
    }
  });
  for (int mib = 1; mib <= 2; ++mib) {
    ASSERT_TRUE(clock.BlockUntilWaiting(1));
    double other = 0;
    gate.PaceFetch(&other, 1 << 10, 0);  // no cap: at once
    clock.Advance(499);
    ASSERT_TRUE(clock.BlockUntilWaiting(1));
    EXPECT_EQ(paced.load(), mib - 1) << "MiB " << mib << " a millisecond early";
    clock.Advance(1);
    ASSERT_TRUE(testing::WaitFor([&] { return paced.load() == mib; }));
  }
  reader.join();
}

// A stage-out's progress: what it will copy is counted first, and what it copied grows to it.
TEST(StageOutCopy, CountsWhatItCopiesAgainstWhatThereIs) {
  TempDir dir;
  const std::string from = dir.path() + "/out";
  fs::create_directories(from + "/sub");
  std::ofstream(from + "/a") << std::string(100000, 'a');
  std::ofstream(from + "/sub/b") << std::string(50000, 'b');
  StageOutProgress progress;
  StageOutResult r = CopyStageOut(from, dir.path() + "/dest", nullptr, &progress);
  ASSERT_TRUE(r.error.empty()) << r.error;
  EXPECT_EQ(progress.total.load(), 150000);
  EXPECT_EQ(progress.copied.load(), 150000);
  EXPECT_EQ(r.bytes, 150000);
}

}  // namespace
}  // namespace corral::agent
