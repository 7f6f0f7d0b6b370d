#include "agent/sessions/exec_context.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace corral::agent {
namespace {

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      out.push_back(std::move(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(std::move(cur));
  return out;
}

Result<std::string> ReadWhole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    int err = errno;
    std::string why = path + ": " + std::strerror(err);
    if (err == ENOENT || err == ESRCH) return NotFound(why);
    return Status(ErrorCode::kPermissionDenied, why);
  }
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// "1 2 3" after a "Key:" line of /proc/PID/status.
std::vector<std::string> StatusField(const std::string& status, const std::string& key) {
  std::istringstream in(status);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(key + ":", 0) != 0) continue;
    std::istringstream words(line.substr(key.size() + 1));
    std::vector<std::string> out;
    for (std::string w; words >> w;) out.push_back(w);
    return out;
  }
  return {};
}

}  // namespace

std::vector<std::string> CorralCgroupProcs(const std::string& proc_cgroup,
                                           const std::string& mountinfo) {
  // Mounts: "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTS".
  std::string v2_mount;
  std::vector<std::pair<std::vector<std::string>, std::string>> v1_mounts;  // controllers
  std::istringstream mounts(mountinfo);
  for (std::string line; std::getline(mounts, line);) {
    size_t dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    std::istringstream head(line.substr(0, dash)), tail(line.substr(dash + 3));
    std::string id, parent, dev, root, point, fstype, source, super;
    head >> id >> parent >> dev >> root >> point;
    tail >> fstype >> source >> super;
    if (root != "/") continue;  // a bind of part of a hierarchy: its paths do not start here
    if (fstype == "cgroup2" && v2_mount.empty()) v2_mount = point;
    if (fstype == "cgroup") v1_mounts.emplace_back(Split(super, ','), point);
  }
  std::vector<std::string> out;
  std::istringstream lines(proc_cgroup);
  for (std::string line; std::getline(lines, line);) {
    size_t a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    std::string controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    bool corral = false;
    for (const std::string& part : Split(path, '/')) corral = corral || part == "corral";
    if (!corral) continue;
    std::string mount;
    if (controllers.empty()) {
      mount = v2_mount;
    } else {
      for (const auto& [opts, point] : v1_mounts) {
        for (const std::string& c : Split(controllers, ',')) {
          for (const std::string& o : opts) {
            if (o == c) mount = point;
          }
        }
        if (!mount.empty()) break;
      }
    }
    if (!mount.empty()) out.push_back(mount + path + "/cgroup.procs");
  }
  return out;
}

Result<ProcessContext> ContextOfProcess(pid_t pid, const std::string& proc,
                                        const std::string& mountinfo) {
  const std::string dir = proc + "/" + std::to_string(pid);
  ProcessContext c;
  auto environ = ReadWhole(dir + "/environ");
  if (!environ.ok()) return environ.status();
  for (std::string& kv : Split(*environ, '\0')) {
    if (!kv.empty()) c.env.push_back(std::move(kv));
  }
  auto status = ReadWhole(dir + "/status");
  if (!status.ok()) return status.status();
  auto uid = StatusField(*status, "Uid"), gid = StatusField(*status, "Gid");
  if (uid.size() < 2 || gid.size() < 2) return Internal(dir + "/status: no Uid or Gid line");
  c.uid = static_cast<uid_t>(std::stoul(uid[1]));  // effective
  c.gid = static_cast<gid_t>(std::stoul(gid[1]));
  for (const std::string& g : StatusField(*status, "Groups")) {
    c.groups.push_back(static_cast<gid_t>(std::stoul(g)));
  }
  char cwd[4096];
  ssize_t n = readlink((dir + "/cwd").c_str(), cwd, sizeof(cwd) - 1);
  c.cwd = n > 0 ? std::string(cwd, static_cast<size_t>(n)) : "/";
  auto cgroups = ReadWhole(dir + "/cgroup");
  auto mounts = ReadWhole(mountinfo);
  if (cgroups.ok() && mounts.ok()) c.cgroup_procs = CorralCgroupProcs(*cgroups, *mounts);
  return c;
}

Result<std::string> FindExecutable(const std::string& name, const std::vector<std::string>& env) {
  if (name.empty()) return InvalidArgument("command: empty");
  if (name.find('/') != std::string::npos) {
    if (access(name.c_str(), X_OK) == 0) return name;
    return NotFound(name + ": " + std::strerror(errno));
  }
  std::string path = "/usr/local/bin:/usr/bin:/bin";
  for (const std::string& kv : env) {
    if (kv.rfind("PATH=", 0) == 0) path = kv.substr(5);
  }
  for (const std::string& d : Split(path, ':')) {
    std::string candidate = (d.empty() ? "." : d) + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return NotFound(name + ": command not found on the job's PATH");
}

}  // namespace corral::agent
