#include "agent/sessions/container_exec.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "agent/node/dirs.h"
#include "core/codec.h"

namespace corral::agent {
namespace {

// The parsed JSON object in `path`; kUnavailable when the file is not there (yet).
Result<Json> ReadJson(const std::string& path) {
  std::string text;
  if (!ReadFile(path, &text)) {
    return Unavailable("the job's container is not started yet (" + path +
                       " is missing; its image may still be being pulled): try again in a moment");
  }
  Json j = Json::parse(text, nullptr, false);
  if (!j.is_object()) return Internal(path + ": not a JSON object");
  return j;
}

// Whether `name` is an executable file in the root file system of process `pid` (its
// container's), every symbolic link resolved inside that root.
bool ExecutableIn(pid_t pid, const std::string& name) {
  const int root =
      open(("/proc/" + std::to_string(pid) + "/root").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (root < 0) return true;  // cannot tell: crun will say
  struct open_how how {};
  how.flags = O_PATH | O_CLOEXEC;
  how.resolve = RESOLVE_IN_ROOT;
  const int fd = static_cast<int>(syscall(SYS_openat2, root, name.c_str(), &how, sizeof(how)));
  close(root);
  if (fd < 0) return false;
  struct stat st {};
  const bool ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0111) != 0;
  close(fd);
  return ok;
}

// kNotFound when `command` is not in the container whose init is `pid` (on `path`, the task's
// PATH, where it has no '/'), as a shell would find it: crun would only say so with its own
// exit status (255), which the caller could not tell from a lost session.
Status FindInContainer(pid_t pid, const std::string& command, const std::string& path) {
  if (command.find('/') != std::string::npos) {
    if (ExecutableIn(pid, command)) return Status::Ok();
    return NotFound(command + ": no such executable in the job's container");
  }
  size_t from = 0;
  for (;;) {
    size_t to = path.find(':', from);
    std::string dir = path.substr(from, to == std::string::npos ? std::string::npos : to - from);
    if (ExecutableIn(pid, (dir.empty() ? "." : dir) + "/" + command)) return Status::Ok();
    if (to == std::string::npos) break;
    from = to + 1;
  }
  return NotFound(command + ": command not found on the PATH of the job's container (" + path +
                  ")");
}

// The command's process: task 0's as its helper gave it to crun (identity, environment,
// working directory), with the command, its terminal and its extra variables (which replace
// the task's of the same name).
Json ExecProcess(Json process, const ExecSpec& spec) {
  process["args"] = spec.command;
  process["terminal"] = spec.pty;
  if (spec.pty) {
    process["consoleSize"] = {{"height", std::clamp(spec.rows, 1, 10000)},
                              {"width", std::clamp(spec.cols, 1, 10000)}};
  }
  Json env = Json::array();
  for (const Json& kv : process.value("env", Json::array())) {
    if (!kv.is_string()) continue;
    const std::string s = kv.get<std::string>();
    bool replaced = false;
    for (const std::string& extra : spec.env) {
      replaced = replaced || s.substr(0, s.find('=')) == extra.substr(0, extra.find('='));
    }
    if (!replaced) env.push_back(s);
  }
  for (const std::string& extra : spec.env) env.push_back(extra);
  process["env"] = env;
  return process;
}

// The PATH the process's environment sets, else the usual one.
std::string ExecPath(const Json& process) {
  std::string path_env = "/usr/local/bin:/usr/bin:/bin";
  for (const Json& kv : process["env"]) {
    if (kv.get<std::string>().rfind("PATH=", 0) == 0) path_env = kv.get<std::string>().substr(5);
  }
  return path_env;
}

// `text` into a new file `path` (0600, not through a link).
Status WriteNewFile(const std::string& path, const std::string& text) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return Internal("cannot write " + path + ": " + std::strerror(errno));
  const bool written = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fd);
  if (!written) return Internal("cannot write " + path);
  return Status::Ok();
}

// crun exec of the process in `process_file` in container `id`, its pid into `dir`.
ExecSpec CrunExecSpec(const std::string& crun, const std::string& crun_root, const std::string& id,
                      const std::string& process_file, const std::string& dir,
                      const ExecSpec& spec) {
  ExecSpec c;
  c.command = {crun,         "--cgroup-manager=disabled",
               "--root",     crun_root,
               "exec",       "--process",
               process_file, "--pid-file",
               dir + "/pid"};
  if (spec.pty) {
    c.console_socket = dir + "/console.sock";
    c.command.insert(c.command.end(), {"--tty", "--console-socket", c.console_socket});
  }
  c.command.push_back(id);
  c.pty = spec.pty;
  c.rows = spec.rows;
  c.cols = spec.cols;
  c.pid_file = dir + "/pid";
  c.env = {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"};
  return c;
}

}  // namespace

Result<ContainerExec> ContainerExec::Prepare(const std::string& run_dir, const ExecSpec& spec) {
  if (spec.command.empty()) return InvalidArgument("command: empty; give a command to run");
  const std::string dir = run_dir + "/container";
  auto plan = ReadJson(dir + "/plan.json");
  if (!plan.ok()) return plan.status();
  struct stat st {};
  if (stat((dir + "/started").c_str(), &st) != 0) {
    return Unavailable(
        "the job's container is not started yet (its image may still be being pulled): try "
        "again in a moment");
  }
  auto task = ReadJson(dir + "/task.0.json");
  if (!task.ok()) return task.status();
  const Json process = ExecProcess(std::move(*task), spec);
  // The container's init (crun's state): where the command is looked for.
  const std::string crun_root = plan->value("crun_root", ""), id = plan->value("id", "");
  if (auto state = ReadJson(crun_root + "/" + id + "/status"); state.ok()) {
    const pid_t init = state->value("pid", 0);
    if (init > 0) CORRAL_RETURN_IF_ERROR(FindInContainer(init, spec.command[0], ExecPath(process)));
  }
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern =
      std::string(tmp != nullptr && *tmp == '/' ? tmp : "/tmp") + "/corral-exec.XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) {
    return Internal("mkdtemp " + pattern + ": " + std::strerror(errno));
  }
  ContainerExec out;
  out.dir_ = pattern;
  const std::string process_file = out.dir_ + "/process.json";
  CORRAL_RETURN_IF_ERROR(WriteNewFile(process_file, process.dump()));
  out.crun_ = CrunExecSpec(plan->value("crun", "/usr/bin/crun"), crun_root, id, process_file,
                           out.dir_, spec);
  return out;
}

ContainerExec::ContainerExec(ContainerExec&& other) noexcept
    : dir_(std::move(other.dir_)), crun_(std::move(other.crun_)) {
  other.dir_.clear();
}

ContainerExec::~ContainerExec() {
  if (dir_.empty()) return;
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

}  // namespace corral::agent
