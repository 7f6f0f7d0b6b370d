// The share shim against a stub libcuda.so.1 (one fake 16 GiB device), reached the ways the
// CUDA runtime reaches the driver: cuGetProcAddress (and _v2), dlsym of the _v2 symbol, and
// the exported symbol. Each probe is a real process with the shim in LD_PRELOAD.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

extern char** environ;

namespace {

constexpr int kOutOfMemory = 2;  // CUDA_ERROR_OUT_OF_MEMORY

class Probe {
 public:
  // Starts the probe with the shim capped at `limit` for the job whose ledger is `ledger`.
  Probe(const std::string& limit, const std::string& ledger, std::vector<std::string> args) {
    std::vector<std::string> env = {
        std::string("LD_PRELOAD=") + CORRAL_GPUSHARE_LIB,
        std::string("LD_LIBRARY_PATH=") + CORRAL_STUB_CUDA_DIR,
        "CORRAL_GPU_MEMORY_LIMIT=" + limit,
        "CORRAL_GPU_SHARE_FILE=" + ledger,
    };
    args.insert(args.begin(), CORRAL_GPUSHARE_PROBE);
    std::vector<char*> argv, envp;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    for (std::string& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    int fds[2];
    EXPECT_EQ(pipe2(fds, O_CLOEXEC), 0);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    EXPECT_EQ(posix_spawn(&pid_, argv[0], &fa, nullptr, argv.data(), envp.data()), 0);
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    out_ = fdopen(fds[0], "r");
  }
  ~Probe() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      Wait();
    }
    if (out_) fclose(out_);
  }
  // The next line of its output ("" at its end).
  std::string Line() {
    char buf[256];
    if (!fgets(buf, sizeof buf, out_)) return "";
    std::string s(buf);
    if (!s.empty() && s.back() == '\n') s.pop_back();
    return s;
  }
  // The rc= values of its output until it exits; its exit status.
  std::vector<int> Rcs(std::vector<std::string>* lines = nullptr) {
    std::vector<int> rcs;
    for (std::string l = Line(); !l.empty(); l = Line()) {
      if (lines) lines->push_back(l);
      if (l.rfind("rc=", 0) == 0) rcs.push_back(std::atoi(l.c_str() + 3));
    }
    return rcs;
  }
  int Wait() {
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    return status;
  }
  void Kill() {
    kill(pid_, SIGKILL);
    Wait();
  }

 private:
  pid_t pid_ = -1;
  FILE* out_ = nullptr;
};

class GpuShare : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gpushare_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { (void)std::system(("rm -rf " + dir_).c_str()); }
  std::string Ledger(const std::string& job) { return dir_ + "/" + job + ".gpushare"; }
  std::string dir_;
};

TEST_F(GpuShare, AllocationPastTheShareFailsOnEveryLookupPath) {
  for (const char* path : {"gpa", "gpa2", "dlsym", "direct", "async", "pool"}) {
    // 4 GiB share: 3 GiB fits, 2 GiB more does not, 1 GiB more does (exactly the share).
    Probe p("4g", Ledger(std::string("job-") + path),
            {"alloc", path, "3072", "alloc", path, "2048", "alloc", path, "1024"});
    std::vector<int> rcs = p.Rcs();
    ASSERT_EQ(rcs.size(), 3u) << path;
    EXPECT_EQ(rcs[0], 0) << path;
    EXPECT_EQ(rcs[1], kOutOfMemory) << path;
    EXPECT_EQ(rcs[2], 0) << path;
  }
}

TEST_F(GpuShare, WithoutTheShimTheStubGivesTheWholeDevice) {
  // The control: the same program and stub, no cap (limit 0), allocate past 4 GiB.
  Probe p("0", Ledger("none"), {"alloc", "gpa", "8192", "info"});
  std::vector<std::string> lines;
  std::vector<int> rcs = p.Rcs(&lines);
  ASSERT_EQ(rcs.size(), 1u);
  EXPECT_EQ(rcs[0], 0);
  EXPECT_EQ(lines.back(), "total=16384 free=8192 device_total=16384");
}

TEST_F(GpuShare, MemGetInfoAndTotalMemReportTheShareAndFreeNeverGoesNegative) {
  Probe p("4g", Ledger("info"),
          {"info", "alloc", "gpa", "1024", "info", "alloc", "gpa", "3072", "info", "free", "info"});
  std::vector<std::string> lines;
  p.Rcs(&lines);
  ASSERT_EQ(lines.size(), 7u);
  EXPECT_EQ(lines[0], "total=4096 free=4096 device_total=4096");
  EXPECT_EQ(lines[2], "total=4096 free=3072 device_total=4096");
  EXPECT_EQ(lines[4], "total=4096 free=0 device_total=4096");
  EXPECT_EQ(lines[5], "rc=0");  // frees the last (3 GiB) allocation
  EXPECT_EQ(lines[6], "total=4096 free=3072 device_total=4096");
}

TEST_F(GpuShare, AsyncFreesReleaseWhatTheyTook) {
  Probe p("4g", Ledger("async"),
          {"alloc", "pool", "4096", "freeasync", "alloc", "async", "4096", "freeasync", "info"});
  std::vector<std::string> lines;
  std::vector<int> rcs = p.Rcs(&lines);
  EXPECT_EQ(rcs, (std::vector<int>{0, 0, 0, 0}));
  EXPECT_EQ(lines.back(), "total=4096 free=4096 device_total=4096");
}

TEST_F(GpuShare, AJobsProcessesShareOneCapAndJobsAreCappedApart) {
  // Job A: a process holds 3 GiB; another of A's processes gets only the 1 GiB left.
  Probe a1("4g", Ledger("A"), {"alloc", "gpa", "3072", "hold"});
  ASSERT_EQ(a1.Line(), "rc=0");
  ASSERT_EQ(a1.Line(), "holding");
  // Job B on the same GPU has its own 4 GiB: two shares never pass 8 of the 16 GiB.
  Probe b1("4g", Ledger("B"), {"alloc", "dlsym", "4096", "hold"});
  ASSERT_EQ(b1.Line(), "rc=0");
  ASSERT_EQ(b1.Line(), "holding");
  Probe a2("4g", Ledger("A"), {"alloc", "gpa", "2048", "alloc", "direct", "1024", "info"});
  std::vector<std::string> lines;
  EXPECT_EQ(a2.Rcs(&lines), (std::vector<int>{kOutOfMemory, 0}));
  EXPECT_EQ(lines.back(), "total=4096 free=0 device_total=4096");
  Probe b2("4g", Ledger("B"), {"alloc", "gpa", "1", "info"});
  EXPECT_EQ(b2.Rcs(), (std::vector<int>{kOutOfMemory}));
}

TEST_F(GpuShare, OtherLookupsGoWhereTheyWouldWithoutTheShim) {
  // RTLD_NEXT is relative to the caller: the wrapped dlsym must not answer from the shim's
  // place in the load order.
  Probe p("4g", Ledger("next"), {"next"});
  std::vector<std::string> lines;
  p.Rcs(&lines);
  EXPECT_EQ(lines, std::vector<std::string>{"next=ok"});
}

TEST_F(GpuShare, AKilledProcessReleasesItsMemory) {
  Probe a1("4g", Ledger("K"), {"alloc", "gpa", "3072", "hold"});
  ASSERT_EQ(a1.Line(), "rc=0");
  ASSERT_EQ(a1.Line(), "holding");
  {
    Probe a2("4g", Ledger("K"), {"alloc", "gpa", "2048"});
    EXPECT_EQ(a2.Rcs(), (std::vector<int>{kOutOfMemory}));
  }
  a1.Kill();
  Probe a3("4g", Ledger("K"), {"info", "alloc", "gpa", "4096"});
  std::vector<std::string> lines;
  EXPECT_EQ(a3.Rcs(&lines), (std::vector<int>{0}));
  EXPECT_EQ(lines.front(), "total=4096 free=4096 device_total=4096");
}

}  // namespace
