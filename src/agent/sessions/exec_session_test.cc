// Commands run inside a job's context (exec_context.h, exec_session.h): the context read from
// a real process, real pipes and a real pseudo-terminal.
#include "agent/sessions/exec_session.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <thread>

namespace corral::agent {
namespace {

// Reads a stream to its end; the bytes, and how it ended.
ExecOutput ReadAll(ExecSession& s, ExecStream stream, int64_t timeout_ms = 10000) {
  ExecOutput all;
  int64_t offset = 0;
  auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < end) {
    std::promise<ExecOutput> p;
    s.Output(stream, offset, 1000, [&p](ExecOutput o) { p.set_value(std::move(o)); });
    ExecOutput o = p.get_future().get();
    all.bytes += o.bytes;
    offset = o.next_offset;
    if (o.ended) {
      all.ended = true;
      all.exit_code = o.exit_code;
      all.signal = o.signal;
      return all;
    }
  }
  return all;
}

// Reads until `needle` shows up in the stream (a terminal's output never ends by itself).
std::string ReadUntil(ExecSession& s, int64_t* offset, const std::string& needle) {
  std::string seen;
  auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (seen.find(needle) == std::string::npos && std::chrono::steady_clock::now() < end) {
    std::promise<ExecOutput> p;
    s.Output(ExecStream::kStdout, *offset, 500, [&p](ExecOutput o) { p.set_value(std::move(o)); });
    ExecOutput o = p.get_future().get();
    seen += o.bytes;
    *offset = o.next_offset;
  }
  return seen;
}

ProcessContext Self() {
  auto c = ContextOfProcess(getpid());
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return c.ok() ? *c : ProcessContext{};
}

TEST(ExecContext, ReadsTheEnvironmentIdentityAndDirectoryOfAProcess) {
  ProcessContext c = Self();
  EXPECT_EQ(c.uid, geteuid());
  EXPECT_EQ(c.gid, getegid());
  char cwd[4096];
  ASSERT_NE(getcwd(cwd, sizeof cwd), nullptr);
  EXPECT_EQ(c.cwd, cwd);
  bool has_path = false;
  for (const std::string& kv : c.env) has_path = has_path || kv.rfind("PATH=", 0) == 0;
  EXPECT_TRUE(has_path);
  EXPECT_EQ(ContextOfProcess(999999999).status().code(), ErrorCode::kNotFound);
}

TEST(ExecContext, FindsTheJobsCorralCgroupsInEveryHierarchy) {
  const std::string mounts =
      "24 1 0:22 / /sys/fs/cgroup/memory rw,nosuid - cgroup cgroup rw,memory\n"
      "25 1 0:23 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid - cgroup cgroup rw,cpu,cpuacct\n"
      "26 1 0:24 / /sys/fs/cgroup/unified rw,nosuid - cgroup2 cgroup2 rw\n"
      "27 1 0:25 / /sys/fs/cgroup/systemd rw - cgroup cgroup rw,name=systemd\n"
      "28 1 0:26 /sub /mnt/bound rw - cgroup cgroup rw,pids\n";
  const std::string procs =
      "5:memory:/corral/n1/7.1.0\n"
      "4:cpu,cpuacct:/corral/n1/7.1.0\n"
      "3:pids:/corral/n1/7.1.0\n"  // only a bind of part of its hierarchy is mounted
      "2:name=systemd:/system.slice/corral-agent.service\n"
      "0::/user.slice\n";
  EXPECT_EQ(CorralCgroupProcs(procs, mounts),
            (std::vector<std::string>{"/sys/fs/cgroup/memory/corral/n1/7.1.0/cgroup.procs",
                                      "/sys/fs/cgroup/cpu,cpuacct/corral/n1/7.1.0/cgroup.procs"}));
  EXPECT_EQ(CorralCgroupProcs("0::/corral/n1/9.1.0\n",
                              "30 1 0:27 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n"),
            (std::vector<std::string>{"/sys/fs/cgroup/corral/n1/9.1.0/cgroup.procs"}));
}

TEST(ExecContext, LooksCommandsUpOnTheJobsPath) {
  EXPECT_EQ(*FindExecutable("sh", {"PATH=/nonexistent:/bin"}), "/bin/sh");
  EXPECT_EQ(FindExecutable("no-such-command-here", {"PATH=/bin"}).status().code(),
            ErrorCode::kNotFound);
  EXPECT_EQ(*FindExecutable("/bin/sh", {}), "/bin/sh");
}

TEST(ExecSession, PipesCarryInputOutputAndTheExitCode) {
  ProcessContext c = Self();
  c.env.push_back("FROM_JOB=job-value");
  ExecSpec spec;
  spec.command = {"sh", "-c",
                  "echo out=$FROM_JOB; echo err >&2; read line; echo got=$line; exit 3"};
  auto s = ExecSession::Start(c, spec, false);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_TRUE((*s)->Input(0, "typed\n", false).ok());
  EXPECT_EQ(*(*s)->Input(0, "typed\n", false), 6) << "a retried input is not taken twice";
  ExecOutput out = ReadAll(**s, ExecStream::kStdout);
  ExecOutput err = ReadAll(**s, ExecStream::kStderr);
  EXPECT_EQ(out.bytes, "out=job-value\ngot=typed\n");
  EXPECT_EQ(err.bytes, "err\n");
  ASSERT_TRUE(out.ended);
  EXPECT_EQ(out.exit_code, 3);
  EXPECT_TRUE((*s)->Finished());
}

TEST(ExecSession, TheEndOfInputClosesTheCommandsStdin) {
  ExecSpec spec;
  spec.command = {"wc", "-l"};
  auto s = ExecSession::Start(Self(), spec, false);
  ASSERT_TRUE(s.ok());
  ASSERT_TRUE((*s)->Input(0, "a\nb\nc\n", true).ok());
  ExecOutput out = ReadAll(**s, ExecStream::kStdout);
  EXPECT_EQ(out.bytes.find('3') != std::string::npos, true) << out.bytes;
  EXPECT_EQ(out.exit_code, 0);
}

TEST(ExecSession, ASignalReachesTheProcessGroup) {
  ExecSpec spec;
  spec.command = {"sleep", "60"};
  auto s = ExecSession::Start(Self(), spec, false);
  ASSERT_TRUE(s.ok());
  (*s)->Signal(SIGTERM);
  ExecOutput out = ReadAll(**s, ExecStream::kStdout);
  ASSERT_TRUE(out.ended);
  EXPECT_EQ(out.signal, SIGTERM);
  EXPECT_EQ(out.exit_code, 128 + SIGTERM);
}

TEST(ExecSession, ATerminalHasItsSizeResizesAndTurnsCtrlCIntoSigint) {
  ExecSpec spec;
  spec.command = {
      "sh", "-c",
      "stty size; echo ready; read x; stty size; "
      "trap 'echo interrupted; exit 9' INT; echo waiting; while :; do sleep 0.05; done"};
  spec.pty = true;
  spec.rows = 30;
  spec.cols = 100;
  auto s = ExecSession::Start(Self(), spec, false);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  int64_t offset = 0;
  std::string first = ReadUntil(**s, &offset, "ready");
  EXPECT_NE(first.find("30 100"), std::string::npos) << first;
  ASSERT_TRUE((*s)->Resize(40, 120).ok());
  ASSERT_TRUE((*s)->Input(0, "go\r", false).ok());
  std::string second = ReadUntil(**s, &offset, "waiting");
  EXPECT_NE(second.find("go"), std::string::npos) << "the terminal echoes input: " << second;
  EXPECT_NE(second.find("40 120"), std::string::npos) << second;
  ASSERT_TRUE((*s)->Input(3, "\x03", false).ok());  // Ctrl-C, as typed
  ExecOutput rest = ReadAll(**s, ExecStream::kStdout);
  EXPECT_NE(rest.bytes.find("interrupted"), std::string::npos) << rest.bytes;
  EXPECT_EQ(rest.exit_code, 9);
  EXPECT_EQ((*s)->Resize(0, 5).code(), ErrorCode::kInvalidArgument);
}

TEST(ExecSession, EndingASessionHangsUpItsCommand) {
  ExecSpec spec;
  spec.command = {"sleep", "60"};
  spec.pty = true;
  auto s = ExecSession::Start(Self(), spec, false);
  ASSERT_TRUE(s.ok());
  pid_t pid = (*s)->pid();
  auto t0 = std::chrono::steady_clock::now();
  s->reset();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
  EXPECT_NE(kill(pid, 0), 0) << "nothing of the session is left";
}

TEST(ExecSession, ACommandNotOnThePathIsNotFound) {
  ExecSpec spec;
  spec.command = {"no-such-command-anywhere"};
  auto s = ExecSession::Start(Self(), spec, false);
  EXPECT_EQ(s.status().code(), ErrorCode::kNotFound);
}

// A stand-in for `crun exec --tty --console-socket S --pid-file P` (and without --tty): runs
// its command as a child, in a terminal of its own sent over the console socket (tty), or
// beside itself in its process group (pipe); writes the child's pid; exits with its status.
constexpr char kConsoleSender[] = R"(
import array, os, socket, sys
sock, pid_file, mode, cmd = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
r, w = os.pipe()
if mode == "tty":
    m, s = os.openpty()
pid = os.fork()
if pid == 0:
    os.close(w)
    os.read(r, 1)
    if mode == "tty":
        os.login_tty(s)
    os.execvp(cmd[0], cmd)
with open(pid_file, "w") as f:
    f.write(str(pid))
if mode == "tty":
    os.close(s)
    c = socket.socket(socket.AF_UNIX)
    c.connect(sock)
    c.sendmsg([b" "], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [m]))])
    c.close()
    os.close(m)
os.write(w, b"x")
_, status = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status))
)";

class ConsoleSocket : public ::testing::Test {
 protected:
  void SetUp() override {
    if (access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "needs /usr/bin/python3";
    char tmpl[] = "/tmp/corral-console-test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    if (!dir_.empty()) RunRemove();
  }
  void RunRemove() {
    for (const char* f : {"/console.sock", "/pid"}) unlink((dir_ + f).c_str());
    rmdir(dir_.c_str());
  }
  ExecSpec Spec(bool tty, const std::string& script) {
    ExecSpec spec;
    spec.command = {"/usr/bin/python3",
                    "-c",
                    kConsoleSender,
                    dir_ + "/console.sock",
                    dir_ + "/pid",
                    tty ? "tty" : "pipe",
                    "sh",
                    "-c",
                    script};
    spec.pty = tty;
    if (tty) spec.console_socket = dir_ + "/console.sock";
    spec.pid_file = dir_ + "/pid";
    return spec;
  }
  std::string dir_;
};

TEST_F(ConsoleSocket, TheTerminalSentOverItIsTheSessionsWithItsSize) {
  ExecSpec spec = Spec(true, "echo ready; read x; stty size; echo got=$x; exit 4");
  spec.rows = 33;
  spec.cols = 101;
  auto s = ExecSession::Start(Self(), spec, false);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  int64_t offset = 0;
  ReadUntil(**s, &offset, "ready");
  ASSERT_TRUE((*s)->Input(0, "hello\r", false).ok());
  ExecOutput rest = ReadAll(**s, ExecStream::kStdout);
  EXPECT_NE(rest.bytes.find("33 101"), std::string::npos) << rest.bytes;
  EXPECT_NE(rest.bytes.find("got=hello"), std::string::npos) << rest.bytes;
  ASSERT_TRUE(rest.ended);
  EXPECT_EQ(rest.exit_code, 4);
}

// A signal goes to the command once: to its group where it leads one (its own terminal), else
// to its group's members but the started program (which would forward it a second time).
TEST_F(ConsoleSocket, ASignalReachesTheCommandOnce) {
  for (bool tty : {true, false}) {
    ExecSpec spec =
        Spec(tty, "trap 'echo term; exit 5' TERM; echo ready; while :; do sleep 0.05; done");
    auto s = ExecSession::Start(Self(), spec, false);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    int64_t offset = 0;
    ReadUntil(**s, &offset, "ready");
    (*s)->Signal(SIGTERM);
    ExecOutput rest = ReadAll(**s, ExecStream::kStdout);
    ASSERT_TRUE(rest.ended) << tty;
    EXPECT_EQ(rest.exit_code, 5) << "the started program was not signalled itself: " << tty;
    EXPECT_NE(rest.bytes.find("term"), std::string::npos) << rest.bytes;
    EXPECT_EQ(rest.bytes.find("term"), rest.bytes.rfind("term")) << rest.bytes;
    RunRemove();
    ASSERT_EQ(mkdir(dir_.c_str(), 0700), 0);
  }
}

// A program that ends without sending a terminal (crun refusing the command): what it said
// and its exit code are the session's.
TEST_F(ConsoleSocket, AProgramThatSendsNoTerminalEndsTheSessionWithItsMessage) {
  ExecSpec spec;
  spec.command = {"sh", "-c", "echo cannot-start-that >&2; exit 9"};
  spec.pty = true;
  spec.console_socket = dir_ + "/console.sock";
  auto s = ExecSession::Start(Self(), spec, false);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ExecOutput out = ReadAll(**s, ExecStream::kStdout);
  EXPECT_EQ(out.bytes, "cannot-start-that\n");
  ASSERT_TRUE(out.ended);
  EXPECT_EQ(out.exit_code, 9);
}

// Ending the session kills the process named in the pid file even where it ignores the hangup
// and left the started program's group (its own session, as with a container's terminal).
TEST_F(ConsoleSocket, EndingTheSessionKillsTheCommandThatIgnoresTheHangup) {
  ExecSpec spec = Spec(true, "trap '' HUP TERM; echo ready; while :; do sleep 0.05; done");
  auto s = ExecSession::Start(Self(), spec, false);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  int64_t offset = 0;
  ReadUntil(**s, &offset, "ready");
  pid_t run = 0;
  {
    FILE* f = fopen((dir_ + "/pid").c_str(), "r");
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(fscanf(f, "%d", &run), 1);
    fclose(f);
  }
  s->reset();
  // Killed; its parent (the started program, killed too) leaves it to init to reap.
  EXPECT_TRUE([&] {
    for (int i = 0; i < 200; ++i) {
      char state = 0;
      FILE* f = fopen(("/proc/" + std::to_string(run) + "/stat").c_str(), "r");
      if (f == nullptr) return true;
      int n = fscanf(f, "%*d %*s %c", &state);
      fclose(f);
      if (n == 1 && state == 'Z') return true;
      usleep(10000);
    }
    return false;
  }()) << "the command survived its session";
}

}  // namespace
}  // namespace corral::agent
