// Jobs in OCI images on a real local cluster whose agent runs as root (docs/containers.md):
// an image the test builds from busybox-static, served by Debian's docker-registry on loopback
// and as an OCI archive and layout; crun runs it. Needs root and the tools setup-tests.sh
// installs: skips with a message otherwise, except under CI=true, where that is a failure.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <pwd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "agent/containers/image_cache.h"
#include "cluster_fixture.h"

namespace corral::testing {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

constexpr char kUser[] = "corral-ct-ana";

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs a shell line; fails the test when it fails.
bool Sh(const std::string& line, std::string* out = nullptr) {
  auto r = RunCommand({"/bin/sh", "-c", line});
  if (out) *out = r.out;
  EXPECT_EQ(r.exit_code, 0) << line << "\n" << r.out << r.err;
  return r.exit_code == 0;
}

// A port no socket uses, below the kernel's ephemeral range (32768 and up): a port there may
// be taken by any outgoing connection between this check and the registry's bind.
int FreePort() {
  for (int port = 20000 + getpid() % 12000;; port = port + 1 < 32768 ? port + 1 : 20000) {
    auto r = RunCommand({"/bin/sh", "-c", "ss -tan | grep -q ':" + std::to_string(port) + " '"});
    if (r.exit_code != 0) return port;
  }
}

// The processes whose command line holds `needle` (this test's own excepted).
std::vector<int> ProcessesWith(const std::string& needle) {
  std::vector<int> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const int pid = std::atoi(name.c_str());
    if (pid == getpid()) continue;
    std::string cmdline = Slurp(e.path().string() + "/cmdline");
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    if (cmdline.find(needle) != std::string::npos) out.push_back(pid);
  }
  return out;
}

// An OCI layout at DIR/layout:TAG of a busybox root file system with `extra` (a file name)
// holding `tag`.
bool MakeImage(const std::string& dir, const std::string& tag) {
  const std::string rootfs = dir + "/rootfs-" + tag;
  std::string applets =
      "sh id df ls cat echo sleep touch test head tail stat mkdir dd env true stty tty grep sort "
      "wc";
  return Sh("set -e; mkdir -p " + rootfs + "/bin " + rootfs + "/etc " + rootfs + "/data-" + tag +
            "; cp /bin/busybox " + rootfs + "/bin/busybox; for a in " + applets +
            "; do ln -s busybox " + rootfs + "/bin/$a; done; echo " + tag + " > " + rootfs +
            "/etc/image-tag; cd " + dir + "; [ -d layout ] || umoci init --layout layout; " +
            "umoci new --image layout:" + tag + "; umoci insert --image layout:" + tag + " " +
            rootfs + " /; umoci config --image layout:" + tag +
            " --config.env PATH=/bin --config.workingdir /");
}

class Containers : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const char* ci = std::getenv("CI");
    const bool in_ci = ci != nullptr && std::string(ci) == "true";
    std::string missing;
    if (geteuid() != 0) missing = "root";
    for (const char* tool : {"/usr/bin/crun", "/usr/bin/skopeo", "/usr/bin/umoci", "/bin/busybox",
                             "/usr/bin/docker-registry"}) {
      if (access(tool, X_OK) != 0) missing += std::string(missing.empty() ? "" : ", ") + tool;
    }
    if (!missing.empty()) {
      skip_ = "needs " + missing + " (scripts/setup-tests.sh)";
      if (in_ci) ci_failure_ = true;
      return;
    }
    if (getpwnam(kUser) == nullptr) {
      RunCommand({"/usr/sbin/useradd", "--create-home", "--shell", "/bin/sh", kUser});
    }
    // A fake nvidia-cuda-mps-control (no GPU here): it makes the pipe directory's control file.
    mps_ = "/tmp/corral-ct-mps-control." + std::to_string(getpid());
    const std::string& mps = mps_;
    std::ofstream(mps)
        << "#!/bin/sh\n[ \"$1\" = -d ] && touch \"$CUDA_MPS_PIPE_DIRECTORY/control\"\n"
        << "exit 0\n";
    chmod(mps.c_str(), 0755);
    cluster_ = new LocalCluster("containers", 1, 2, {"--min-runtime-before-preempt", "0"},
                                {"--run-as", "owner", "--mps-control", mps});
    dir_ = cluster_->dir() + "/images";
    fs::create_directories(dir_);
    ASSERT_TRUE(MakeImage(dir_, "v1"));
    ASSERT_TRUE(MakeImage(dir_, "v2"));
    ASSERT_TRUE(MakeImage(dir_, "v3"));
    ASSERT_TRUE(Sh("skopeo --insecure-policy copy --quiet oci:" + dir_ +
                   "/layout:v1 oci-archive:" + dir_ + "/v1.tar"));
    // The registry on loopback, with the images pushed to it.
    port_ = FreePort();
    std::ofstream(dir_ + "/registry.yml")
        << "version: 0.1\nstorage:\n  filesystem:\n    rootdirectory: " << dir_
        << "/registry\nhttp:\n  addr: 127.0.0.1:" << port_ << "\n";
    registry_ = new Daemon({"/usr/bin/docker-registry", "serve", dir_ + "/registry.yml"},
                           dir_ + "/registry.log");
    const std::string reg = "127.0.0.1:" + std::to_string(port_);
    ASSERT_TRUE(WaitUntil(10000, [&] {
      return RunCommand({"/usr/bin/curl", "-sf", "http://" + reg + "/v2/"}).exit_code == 0;
    }));
    for (const char* tag : {"v1", "v2"}) {
      ASSERT_TRUE(Sh("skopeo --insecure-policy copy --quiet --dest-tls-verify=false oci:" + dir_ +
                     "/layout:" + tag + " docker://" + reg + "/test/busybox:" + tag));
    }
    auto t = cluster_->Corral({"token", "create", "--user", kUser});
    ASSERT_EQ(t.exit_code, 0) << t.err;
    token_ = t.out.substr(0, t.out.find('\n'));
    data_ = cluster_->dir() + "/data";
    fs::create_directories(data_);
    struct passwd* pw = getpwnam(kUser);
    ASSERT_NE(pw, nullptr);
    uid_ = pw->pw_uid;
    ASSERT_EQ(chown(data_.c_str(), pw->pw_uid, pw->pw_gid), 0);
  }
  static void TearDownTestSuite() {
    if (std::getenv("KEEP") != nullptr) return;
    if (!mps_.empty()) unlink(mps_.c_str());
    delete cluster_;
    delete registry_;
    cluster_ = nullptr;
    registry_ = nullptr;
  }
  void SetUp() override {
    if (ci_failure_) FAIL() << skip_ << ", and CI=true";
    if (!skip_.empty()) GTEST_SKIP() << skip_;
    if (token_.empty()) FAIL() << "the suite's setup failed (above)";
  }

  static std::string Ref(const std::string& tag) {
    return "127.0.0.1:" + std::to_string(port_) + "/test/busybox:" + tag;
  }
  CommandResult As(const std::vector<std::string>& args) const {
    std::vector<std::string> argv = {CorralBin()};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommand(argv, {{"CORRAL_ADDR", cluster_->addr()},
                             {"CORRAL_TOKEN", token_},
                             {"CORRAL_CONFIG", cluster_->dir() + "/none.json"}});
  }
  std::string Submit(std::vector<std::string> args) const {
    args.insert(args.begin(), {"submit", "--parsable"});
    auto r = As(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out.substr(0, r.out.find('\n'));
  }
  Json Wait(const std::string& id) const {
    As({"wait", "--timeout", "60s", id});
    auto r = As({"show", id, "-o", "json"});
    return Json::parse(r.out, nullptr, false);
  }
  std::string Log(const std::string& id, bool err = false) const {
    std::vector<std::string> args = {"logs", id};
    if (err) args.push_back("--stderr");
    return As(args).out;
  }
  static std::string Reason(const Json& job) {
    if (!job.contains("runs") || job["runs"].empty()) return job.dump();
    return job["runs"].back().value("reason", "");
  }
  static std::string State(const Json& job) { return job.value("state", "?"); }

  static inline LocalCluster* cluster_ = nullptr;
  static inline Daemon* registry_ = nullptr;
  static inline std::string skip_, dir_, token_, data_, mps_;
  static inline bool ci_failure_ = false;
  static inline int port_ = 0;
  static inline uid_t uid_ = 0;
};

TEST_F(Containers, RunsInItsImageAsItsOwnerWithItsMountsShmAndOnlyItsGpus) {
  const std::string id =
      Submit({"--image", Ref("v1"), "--gpus", "1", "--memory", "256M", "--mount", data_ + ":/data",
              "--", "sh", "-c",
              "cat /etc/image-tag; id -u; touch /data/made-inside; df -k /dev/shm | tail -1; "
              "ls /dev | grep nvidia; echo cvd=$CUDA_VISIBLE_DEVICES rank=$RANK job=$CORRAL_JOB_ID "
              "slurm=$SLURM_JOB_ID; pwd; test -e /usr/bin/apt-get && echo HOST-ROOT; true"});
  Json job = Wait(id);
  const std::string out = Log(id);
  ASSERT_EQ(State(job), "succeeded") << Reason(job) << out << Log(id, true);
  EXPECT_NE(out.find("v1\n" + std::to_string(uid_) + "\n"), std::string::npos) << out;
  EXPECT_EQ(out.find("HOST-ROOT"), std::string::npos) << out;
  struct stat st {};
  ASSERT_EQ(stat((data_ + "/made-inside").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, uid_);
  EXPECT_NE(out.find(" 262144 "), std::string::npos) << "a 256 MiB /dev/shm: " << out;
  std::smatch m;
  ASSERT_TRUE(
      std::regex_search(out, m, std::regex("cvd=([0-9]+) rank=0 job=" + id + " slurm=" + id)))
      << out;
  // Exactly its own GPU's device.
  EXPECT_NE(out.find("nvidia" + m[1].str() + "\n"), std::string::npos) << out;
  std::string devs = out.substr(out.find("\n", out.find(" 262144 ")) + 1);
  devs = devs.substr(0, devs.find("cvd="));
  EXPECT_EQ(devs, "nvidia" + m[1].str() + "\n") << out;
  EXPECT_NE(Log(id, true).find("pulling image " + Ref("v1") + " on node1"), std::string::npos);
  // The pull and its time are in the job's events.
  std::string events;
  for (const Json& e : job.value("events", Json::array())) {
    events += e.value("what", "") + ": " + e.value("reason", "") + "\n";
  }
  EXPECT_NE(events.find("pulling image: pulling image " + Ref("v1") + " on node1\n"),
            std::string::npos)
      << events;
  EXPECT_TRUE(std::regex_search(
      events, std::regex("image pulled: image [^ ]+ pulled on node1 in [0-9]+ ms\n")))
      << events;
}

// An MPS share in an image reaches its owner's MPS daemon: the pipe directory is mounted.
TEST_F(Containers, AnMpsShareSeesItsDaemonsPipeDirectory) {
  const std::string id = Submit(
      {"--image", "oci:" + dir_ + "/layout:v1", "--gpus", "0.25", "--gpu-isolation", "mps", "--",
       "sh", "-c", "ls $CUDA_MPS_PIPE_DIRECTORY; echo t=$CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"});
  Json job = Wait(id);
  ASSERT_EQ(State(job), "succeeded") << Reason(job) << Log(id, true);
  EXPECT_EQ(Log(id), "control\nt=25\n");
}

TEST_F(Containers, CancelGivesTheJobItsGraceInside) {
  const std::string id =
      Submit({"--image", "oci:" + dir_ + "/layout:v1", "--grace-period", "5s", "--mount",
              data_ + ":/data", "--", "sh", "-c",
              "trap 'echo stopped-cleanly > /data/grace-" + std::string("$CORRAL_JOB_ID") +
                  "; exit 0' TERM; echo up; while true; do sleep 0.1; done"});
  ASSERT_TRUE(WaitUntil(30000, [&] { return Log(id).find("up") != std::string::npos; }))
      << Log(id, true);
  ASSERT_EQ(As({"cancel", id}).exit_code, 0);
  Json job = Wait(id);
  EXPECT_EQ(State(job), "cancelled");
  EXPECT_EQ(Slurp(data_ + "/grace-" + id), "stopped-cleanly\n");
}

// A preemptible low-priority run holding every GPU is preempted by a higher-priority job: the
// process in the container gets SIGTERM and its whole grace (its trap outlives the TERM by a
// second and exits 0, not SIGKILLed), the run ends preempted, the job is requeued, and the
// higher-priority job runs.
TEST_F(Containers, PreemptionGivesTheJobItsGraceInside) {
  const std::string low =
      Submit({"--image", "oci:" + dir_ + "/layout:v1", "--gpus", "2", "--preemptible", "--priority",
              "-10", "--grace-period", "10s", "--mount", data_ + ":/data", "--", "sh", "-c",
              "f=/data/preempt-$CORRAL_JOB_ID; if test -e $f; then echo second run; exit 0; fi; "
              "trap 'echo term > $f; sleep 1; echo exited-on-its-own >> $f; "
              "exit 0' TERM; echo up; while true; do sleep 0.1; done"});
  ASSERT_TRUE(WaitUntil(30000, [&] { return Log(low).find("up") != std::string::npos; }))
      << Log(low, true);
  const std::string high = Submit(
      {"--image", "oci:" + dir_ + "/layout:v1", "--gpus", "2", "--", "cat", "/etc/image-tag"});
  Json h = Wait(high);
  ASSERT_EQ(State(h), "succeeded") << Reason(h) << Log(high, true);
  EXPECT_EQ(Log(high), "v1\n");
  EXPECT_EQ(Slurp(data_ + "/preempt-" + low), "term\nexited-on-its-own\n");
  Json job = Wait(low);
  ASSERT_GE(job["runs"].size(), 2u) << "requeued after its preemption: " << job.dump();
  const Json& first = job["runs"][0];
  EXPECT_EQ(first.value("state", ""), "preempted") << first.dump();
  EXPECT_EQ(first.value("reason", "").rfind("preempted", 0), 0u) << first.dump();
  EXPECT_EQ(first["exit_codes"], Json::array({0})) << "it ended on its own, not by SIGKILL";
  EXPECT_LE(first.value("ended_at", int64_t{0}), h["runs"][0].value("started_at", int64_t{0}))
      << "the higher-priority job started only once the GPUs were free";
  std::string events;
  for (const Json& e : job.value("events", Json::array())) {
    events += e.value("what", "") + ": " + e.value("reason", "") + "\n";
  }
  EXPECT_NE(events.find(": preempted"), std::string::npos) << events;
  EXPECT_EQ(State(job), "succeeded") << Reason(job) << Log(low, true);
  EXPECT_NE(Log(low).find("second run\n"), std::string::npos) << Log(low);
}

TEST_F(Containers, TheMemoryLimitHoldsInside) {
  const std::string id = Submit({"--image", "oci-archive:" + dir_ + "/v1.tar", "--memory", "64M",
                                 "--", "sh", "-c", "head -c 400000000 /dev/zero | tail"});
  Json job = Wait(id);
  EXPECT_EQ(State(job), "failed");
  EXPECT_NE(Reason(job).find("memory"), std::string::npos) << Reason(job);
}

TEST_F(Containers, TwoRunsRacingForAnImagePullItOnce) {
  const std::string a = Submit({"--image", Ref("v2"), "--", "cat", "/etc/image-tag"});
  const std::string b = Submit({"--image", Ref("v2"), "--", "cat", "/etc/image-tag"});
  EXPECT_EQ(State(Wait(a)), "succeeded") << Log(a, true);
  EXPECT_EQ(State(Wait(b)), "succeeded") << Log(b, true);
  EXPECT_EQ(Log(a), "v2\n");
  const std::string errs = Log(a, true) + Log(b, true);
  size_t pulls = 0;
  for (size_t at = errs.find("pulling image"); at != std::string::npos;
       at = errs.find("pulling image", at + 1)) {
    ++pulls;
  }
  EXPECT_EQ(pulls, 1u) << errs;
  // `corral nodes` shows what the node's cache holds.
  EXPECT_TRUE(WaitUntil(10000, [&] {
    Json nodes = Json::parse(As({"nodes", "-o", "json"}).out, nullptr, false);
    return nodes.is_array() && !nodes.empty() &&
           nodes[0].value("image_cache", Json::object()).value("images", 0) >= 1 &&
           nodes[0]["image_cache"].value("bytes", 0) > 0;
  })) << As({"nodes", "-o", "json"}).out;
  EXPECT_NE(As({"nodes"}).out.find("IMAGES"), std::string::npos) << As({"nodes"}).out;
}

TEST_F(Containers, SlurmScriptsAndSrunRunInTheImage) {
  const std::string shims = cluster_->dir() + "/shims", work = data_ + "/slurm";
  ASSERT_EQ(cluster_->Corral({"slurm", "install-shims", shims}).exit_code, 0);
  fs::create_directories(work);
  struct passwd* pw = getpwnam(kUser);
  ASSERT_EQ(chown(work.c_str(), pw->pw_uid, pw->pw_gid), 0);
  std::ofstream(work + "/job.sh") << "#!/bin/sh\n#SBATCH --container-image=" << Ref("v1")
                                  << "\n#SBATCH --no-container-mount-home\ncat /etc/image-tag\n"
                                  << "echo job=$SLURM_JOB_ID\n";
  std::map<std::string, std::string> env = {{"CORRAL_ADDR", cluster_->addr()},
                                            {"CORRAL_TOKEN", token_},
                                            {"CORRAL_CONFIG", cluster_->dir() + "/none.json"},
                                            {"PATH", shims + ":/usr/bin:/bin"}};
  auto r = RunCommand({"/bin/sh", "-c", "cd " + work + " && sbatch --parsable job.sh"}, env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string id = r.out.substr(0, r.out.find('\n'));
  Json job = Wait(id);
  EXPECT_EQ(State(job), "succeeded") << Reason(job) << Log(id, true);
  EXPECT_EQ(Slurp(work + "/slurm-" + id + ".out"), "v1\njob=" + id + "\n");
  auto s =
      RunCommand({"/bin/sh", "-c",
                  "cd " + work + " && srun --container-image=" + Ref("v1") + " cat /etc/image-tag"},
                 env);
  EXPECT_EQ(s.exit_code, 0) << s.err;
  EXPECT_EQ(s.out, "v1\n") << s.err;
}

TEST_F(Containers, BadInputEndsTheJobWithAReasonNamingIt) {
  // Refused at submission, naming the field.
  auto bad = As({"submit", "--image", "Not A Ref", "--", "true"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("field 'image'"), std::string::npos) << bad.err;
  bad = As({"submit", "--image", Ref("v1"), "--mount", "data:/data", "--", "true"});
  EXPECT_NE(bad.err.find("field 'mounts[0]'"), std::string::npos) << bad.err;
  // Refused on the node, each with its reason.
  const std::string locked = cluster_->dir() + "/locked";
  fs::create_directories(locked);
  chmod(locked.c_str(), 0700);
  std::ofstream(dir_ + "/corrupt.tar") << "not a tar archive";
  const int closed = FreePort();
  struct Case {
    std::vector<std::string> args;
    std::string reason;
  };
  const std::vector<Case> cases = {
      {{"--image", Ref("nope")}, "test/busybox:nope"},
      {{"--image", "127.0.0.1:" + std::to_string(closed) + "/test/busybox:v1"},
       "127.0.0.1:" + std::to_string(closed)},
      {{"--image", Ref("v1"), "--mount", locked + ":/locked"}, locked},
      {{"--image", Ref("v1"), "--mount", "/no/such/dir:/x"}, "/no/such/dir"},
      {{"--image", "oci-archive:" + dir_ + "/corrupt.tar"}, dir_ + "/corrupt.tar"},
      {{"--image", dir_ + "/missing.tar"}, dir_ + "/missing.tar"},
  };
  std::vector<std::string> ids;
  for (const Case& c : cases) {
    std::vector<std::string> args = c.args;
    args.insert(args.end(), {"--", "true"});
    ids.push_back(Submit(args));
  }
  for (size_t i = 0; i < cases.size(); ++i) {
    Json job = Wait(ids[i]);
    EXPECT_EQ(State(job), "failed") << cases[i].reason;
    EXPECT_NE(Reason(job).find(cases[i].reason), std::string::npos) << Reason(job);
    EXPECT_EQ(job["runs"].size(), 1u) << "not retried";
  }
  // Nothing half-written is left in the cache.
  const std::string cache = cluster_->dir() + "/agents/node1/images";
  EXPECT_TRUE(fs::is_empty(cache + "/tmp")) << "tmp/ holds an interrupted pull";
}

// `corral exec` into a job in an image runs in the job's container, not on the host: the image's
// root, the job's mounts and PID namespace (its init is the container's), the owner's uid, the
// job's environment and cgroups, only its GPU's device; its exit code, stderr and stdin; a real
// terminal there (tests/interactive/pty_session.py, with the image's busybox sh); a command the
// image lacks is refused naming it; anyone but the owner gets 403.
TEST_F(Containers, ExecRunsInTheJobsContainer) {
  const std::string id = Submit(
      {"--image", "oci:" + dir_ + "/layout:v1", "--gpus", "1", "--mount", data_ + ":/data", "--",
       "sh", "-c", "grep -h corral /proc/self/cgroup | sort; echo cgroup-end; exec sleep 300"});
  ASSERT_TRUE(WaitUntil(30000, [&] { return Log(id).find("cgroup-end") != std::string::npos; }))
      << Log(id, true);
  const std::string job_groups = Log(id).substr(0, Log(id).find("cgroup-end"));
  auto r = As({"exec", id, "--", "sh", "-c",
               "cat /etc/image-tag; id -u; echo job=$CORRAL_JOB_ID cvd=$CUDA_VISIBLE_DEVICES; "
               "ls /dev | grep nvidia; ls -d /data; echo init=$(cat /proc/1/cmdline); "
               "test -e /usr/bin/apt-get && echo HOST-ROOT; echo groups:; grep -h corral "
               "/proc/self/cgroup | sort; echo cgroup-end; echo to-stderr >&2; exit 3"});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      r.out, m,
      std::regex("^v1\\n" + std::to_string(uid_) + "\\njob=" + id +
                 " cvd=([0-9]+)\\nnvidia([0-9]+)\\n/data\\ninit=/.corral/initpause\\n")))
      << r.out << r.err;
  EXPECT_EQ(m[1].str(), m[2].str()) << "its own GPU's device alone: " << r.out;
  EXPECT_EQ(r.out.find("HOST-ROOT"), std::string::npos) << r.out;
  const size_t from = r.out.find("groups:\n") + 8;
  EXPECT_EQ(r.out.substr(from, r.out.find("cgroup-end") - from), job_groups)
      << "the job's cgroups: " << r.out;
  EXPECT_NE(r.err.find("to-stderr"), std::string::npos) << r.err;
  // Its input, and a signal's exit code.
  auto piped = RunCommand(
      {"/bin/sh", "-c", "printf 'one\\ntwo\\n' | " + CorralBin() + " exec " + id + " -- wc -l"},
      {{"CORRAL_ADDR", cluster_->addr()},
       {"CORRAL_TOKEN", token_},
       {"CORRAL_CONFIG", cluster_->dir() + "/none.json"}});
  EXPECT_EQ(piped.exit_code, 0) << piped.err;
  EXPECT_NE(piped.out.find("2"), std::string::npos) << piped.out;
  EXPECT_EQ(As({"exec", id, "--", "sh", "-c", "kill -9 $$"}).exit_code, 137);
  // A command the image does not have: refused, naming it.
  auto missing = As({"exec", id, "--", "apt-get", "update"});
  EXPECT_EQ(missing.exit_code, 1) << missing.out << missing.err;
  EXPECT_NE(missing.err.find("apt-get: command not found on the PATH of the job's container"),
            std::string::npos)
      << missing.err;
  // A terminal in the container: typed input, window size and resize, tty, Ctrl-C, exit 7.
  auto pty = RunCommand(
      {"/usr/bin/python3", std::string(CORRAL_SOURCE_DIR) + "/tests/interactive/pty_session.py",
       "exec-sh", CorralBin(), "exec", id, "--pty", "--"},
      {{"CORRAL_ADDR", cluster_->addr()},
       {"CORRAL_TOKEN", token_},
       {"CORRAL_CONFIG", cluster_->dir() + "/none.json"},
       {"TERM", "xterm"}});
  EXPECT_EQ(pty.exit_code, 0) << pty.out << pty.err;
  // Someone else: 403.
  auto other = cluster_->Corral({"token", "create", "--user", "corral-ct-mallory"});
  ASSERT_EQ(other.exit_code, 0) << other.err;
  auto refused = RunCommand({CorralBin(), "exec", id, "--", "true"},
                            {{"CORRAL_ADDR", cluster_->addr()},
                             {"CORRAL_TOKEN", other.out.substr(0, other.out.find('\n'))},
                             {"CORRAL_CONFIG", cluster_->dir() + "/none.json"}});
  EXPECT_EQ(refused.exit_code, 1) << refused.out << refused.err;
  EXPECT_NE(refused.err.find("is for its owner"), std::string::npos) << refused.err;
  EXPECT_EQ(State(Json::parse(As({"show", id, "-o", "json"}).out, nullptr, false)), "running")
      << "the job is not disturbed";
  // Nothing of the sessions is left: no crun exec of theirs.
  EXPECT_TRUE(WaitUntil(10000, [&] { return ProcessesWith("/corral-exec.").empty(); }));
  As({"cancel", id});
}

// `corral notebook --image`: Jupyter in the job's container (an image of its own root with the
// host's /usr mounted, where Debian's jupyter-notebook is, as ddp_container_test builds it),
// ready once it answers, reached through the head's /s/ proxy, a cell run by a kernel in the
// container (the image's root, the owner's uid, the job's GPU), another user refused.
TEST_F(Containers, ANotebookRunsInItsImageThroughTheHead) {
  const char* ci = std::getenv("CI");
  const bool in_ci = ci != nullptr && std::string(ci) == "true";
  for (const char* need : {"/usr/bin/jupyter-notebook", "/usr/bin/python3"}) {
    if (access(need, X_OK) != 0) {
      if (in_ci) FAIL() << "CI must run this: no " << need;
      GTEST_SKIP() << "no " << need << " (Debian's jupyter-notebook)";
    }
  }
  if (RunCommand({"/usr/bin/python3", "-c", "import websocket"}).exit_code != 0) {
    if (in_ci) FAIL() << "CI must run this: no python3-websocket";
    GTEST_SKIP() << "no python3-websocket";
  }
  if (!fs::is_symlink("/lib")) {
    if (in_ci) FAIL() << "CI must run this: the image links /lib to /usr/lib: needs merged /usr";
    GTEST_SKIP() << "the image links /lib to /usr/lib: needs merged /usr";
  }
  // The image: merged-/usr links, the linker cache and alternatives, the owner in its passwd.
  const std::string root = dir_ + "/rootfs-jupyter";
  ASSERT_TRUE(
      Sh("set -e; mkdir -p " + root + "/usr " + root + "/etc " + root + "/tmp; cd " + root +
         "; for l in bin lib lib64 sbin; do ln -s usr/$l $l; done; cp -a /etc/alternatives "
         "etc/; cp /etc/ld.so.cache etc/; getent passwd root " +
         kUser + " > etc/passwd; getent group root $(id -gn " + kUser +
         ") > etc/group; echo jupyter-image > etc/image-tag; cd " + dir_ +
         "; umoci new --image layout:jupyter; umoci insert --image layout:jupyter " + root +
         " / >/dev/null; umoci config --image layout:jupyter --config.env PATH=/usr/bin:/bin"));
  const auto t0 = std::chrono::steady_clock::now();
  auto r = As({"notebook", "--gpus", "1", "--image", "oci:" + dir_ + "/layout:jupyter", "--mount",
               "/usr:/usr:ro"});
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  GTEST_LOG_(INFO) << "corral notebook --image ready after " << took << " s";
  std::smatch m;
  const std::string url = r.out.substr(0, r.out.find('\n'));
  ASSERT_TRUE(std::regex_match(url, m, std::regex(R"(https?://[^/]+/s/([0-9]+)/tree\?ticket=.+)")))
      << r.out;
  const std::string id = m[1].str();
  Json job = Json::parse(As({"show", id, "-o", "json"}).out, nullptr, false);
  bool ready = false;
  for (const auto& e : job["events"]) ready = ready || e.value("what", "") == "notebook ready";
  EXPECT_TRUE(ready) << job.dump();
  auto other = cluster_->Corral({"token", "create", "--user", "corral-ct-nbother"});
  ASSERT_EQ(other.exit_code, 0) << other.err;
  auto drive =
      RunCommand({"/usr/bin/python3",
                  std::string(CORRAL_SOURCE_DIR) + "/tests/interactive/notebook_session.py", url,
                  other.out.substr(0, other.out.find('\n'))},
                 {{"NOTEBOOK_CELL",
                   "import os\nprint('CVD=' + os.environ['CUDA_VISIBLE_DEVICES'], "
                   "open('/etc/image-tag').read().strip(), os.getuid())"}});
  ASSERT_EQ(drive.exit_code, 0) << drive.out << drive.err;
  Json seen = Json::parse(drive.out, nullptr, false);
  ASSERT_TRUE(seen.is_object()) << drive.out;
  EXPECT_EQ(seen.value("page_status", 0), 200) << seen.dump();
  EXPECT_TRUE(seen.value("page_is_jupyter", false)) << seen.dump();
  EXPECT_EQ(seen.value("other_status", 0), 403) << seen.dump();
  EXPECT_EQ(seen.value("kernel_status", 0), 201) << seen.dump();
  EXPECT_EQ(seen.value("reply", ""), "ok") << seen.dump();
  const std::string gpu = std::to_string(job["runs"].back()["placement"][0]["gpus"][0].get<int>());
  EXPECT_EQ(seen.value("output", ""),
            "CVD=" + gpu + " jupyter-image " + std::to_string(uid_) + "\n")
      << seen.dump();
  As({"cancel", id});
  Wait(id);
}

// The cache alone: over its limit, it evicts the least recently used images no run holds.
TEST_F(Containers, EvictionKeepsImagesInUse) {
  agent::ImageCacheConfig config;
  config.dir = cluster_->dir() + "/evict-cache";
  config.limit_bytes = 1;  // everything unused goes
  agent::ImageCache cache(config);
  std::ostringstream log;
  auto a = cache.Acquire("oci:" + dir_ + "/layout:v1", "here", log);
  ASSERT_TRUE(a.ok()) << a.status().message();
  auto b = cache.Acquire("oci:" + dir_ + "/layout:v3", "here", log);
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ(cache.Usage().images, 2);  // both in use: neither evicted by b's pull
  close(b->use_fd);
  EXPECT_EQ(cache.Evict(), 1);
  EXPECT_TRUE(fs::exists(a->rootfs));
  EXPECT_FALSE(fs::exists(b->rootfs));
  close(a->use_fd);
  EXPECT_EQ(cache.Evict(), 1);
  EXPECT_EQ(cache.Usage().images, 0);
}

// A pull killed half way (its process gone, its lock free) leaves a directory in tmp/ that the
// agent removes when it starts; one whose pull is still under way (its lock held) stays.
TEST_F(Containers, InterruptedPullsAreCleanedUp) {
  agent::ImageCacheConfig config;
  config.dir = cluster_->dir() + "/interrupted-cache";
  agent::ImageCache cache(config);
  std::ostringstream log;
  ASSERT_TRUE(cache.Acquire("oci:" + dir_ + "/layout:v1", "here", log).ok());  // makes the dirs
  fs::create_directories(config.dir + "/tmp/0123456789abcdef.999999/layout");
  fs::create_directories(config.dir + "/tmp/fedcba9876543210.999998/layout");
  int held = open((config.dir + "/locks/fedcba9876543210.lock").c_str(), O_RDWR | O_CREAT, 0600);
  ASSERT_EQ(flock(held, LOCK_EX), 0);
  cache.CleanInterrupted();
  EXPECT_FALSE(fs::exists(config.dir + "/tmp/0123456789abcdef.999999"));
  EXPECT_TRUE(fs::exists(config.dir + "/tmp/fedcba9876543210.999998"));
  close(held);
  cache.CleanInterrupted();
  EXPECT_FALSE(fs::exists(config.dir + "/tmp/fedcba9876543210.999998"));
}

// The agent is SIGKILLed while a run's image is being pulled: the pull runs in the run's task
// helper, under the replica's monitor, so it goes on without the agent; the restarted agent
// adopts the run, the job succeeds with its image pulled once, and nothing is left behind.
TEST_F(Containers, AnAgentKilledMidPullLeavesThePullToTheRun) {
  // An image of its own, 48 MB of random bytes (they do not compress): a pull of a second or two.
  const std::string big = dir_ + "/rootfs-big";
  ASSERT_TRUE(Sh("set -e; mkdir -p " + big + "/bin " + big + "/etc; cp /bin/busybox " + big +
                 "/bin/; for a in sh cat; do ln -s busybox " + big + "/bin/$a; done; echo big > " +
                 big + "/etc/image-tag; head -c 48000000 /dev/urandom > " + big + "/blob; cd " +
                 dir_ + "; umoci new --image layout:big; umoci insert --image " + "layout:big " +
                 big + " / >/dev/null"));
  const std::string agent_dir = cluster_->dir() + "/agents/node1";
  const std::string pulls = agent_dir + "/images/tmp/";
  const std::string id =
      Submit({"--image", "oci:" + dir_ + "/layout:big", "--", "sh", "-c", "cat /etc/image-tag"});
  ASSERT_TRUE(WaitUntil(30000, [&] { return !ProcessesWith(pulls).empty(); }))
      << "no pull of the image seen: " << Log(id, true);
  cluster_->KillAgent(1, SIGKILL);
  const auto killed_at = fs::file_time_type::clock::now();
  // The pull goes on without the agent, and the task runs: the run's pulled note is written.
  const std::string note = agent_dir + "/runs/" + id + ".1.0/container/pulled";
  const bool pulled = WaitUntil(60000, [&] { return fs::exists(note); });
  cluster_->StartAgent(1);
  ASSERT_TRUE(pulled) << "the pull did not finish without the agent";
  EXPECT_GT(fs::last_write_time(note), killed_at);
  Json job = Wait(id);
  ASSERT_EQ(State(job), "succeeded") << Reason(job) << Log(id, true);
  EXPECT_EQ(Log(id), "big\n");
  EXPECT_EQ(job["runs"].size(), 1u) << job.dump();
  std::string err = Log(id, true);
  size_t n = 0;
  for (size_t at = err.find("corral: pulled image"); at != std::string::npos;
       at = err.find("corral: pulled image", at + 1)) {
    ++n;
  }
  EXPECT_EQ(n, 1u) << "one pull: " << err;
  // Nothing left: no process of the run or of a pull, no partial pull, no container state.
  EXPECT_TRUE(WaitUntil(10000,
                        [&] {
                          return ProcessesWith(pulls).empty() &&
                                 ProcessesWith("/runs/" + id + ".1.0").empty();
                        }))
      << "orphans: " << ProcessesWith("/runs/" + id + ".1.0").size();
  std::error_code ec;
  EXPECT_TRUE(fs::is_empty(pulls, ec)) << pulls;
  bool container_state = false;
  for (const auto& e : fs::directory_iterator(agent_dir + "/crun", ec)) {
    container_state =
        container_state || e.path().filename().string().find("." + id + ".1.") != std::string::npos;
  }
  EXPECT_FALSE(container_state) << "crun state of the run is left in " << agent_dir << "/crun";
  EXPECT_FALSE(fs::exists(agent_dir + "/runs/" + id + ".1.0/container/rootfs"));
  EXPECT_EQ(As({"nodes"}).out.find("lost"), std::string::npos);
}

}  // namespace
}  // namespace corral::testing
