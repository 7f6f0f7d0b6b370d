#include "agent/containers/image_cache.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "agent/node/dirs.h"
#include "agent/node/file_util.h"
#include "core/codec.h"
#include "core/wait_status.h"

extern char** environ;

namespace corral::agent {
namespace fs = std::filesystem;
namespace {

std::string Hex64(uint64_t v) {
  char buf[17];
  snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// A file name for a source: FNV-1a of its key (not a security boundary: the cache is root's).
std::string KeyName(const std::string& key) {
  uint64_t h = 1469598103934665603ULL;
  for (char c : key) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  return Hex64(h);
}

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
  return s;
}

// The tool's last lines, the ones that say why it failed.
std::string ToolOutputTail(const std::string& out) {
  std::string t = Trim(out);
  if (t.size() > 400) t = "..." + t.substr(t.size() - 400);
  for (char& c : t) {
    if (c == '\n') c = ' ';
  }
  return t;
}

int64_t TreeBytes(const std::string& dir) {
  int64_t total = 0;
  std::error_code ec;
  for (auto it =
           fs::recursive_directory_iterator(dir, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    struct stat st {};
    if (lstat(it->path().c_str(), &st) == 0) total += static_cast<int64_t>(st.st_blocks) * 512;
  }
  return total;
}

bool WriteWhole(const std::string& path, const std::string& data) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << data;
    if (!out) return false;
  }
  return rename(tmp.c_str(), path.c_str()) == 0;
}

// The source of `ref` as skopeo names it, and the key the cache remembers it under: a registry
// reference as written, a file or layout with its size and time (a rewritten archive is a new
// image).
struct Source {
  std::string skopeo_ref;
  std::string key;
  bool registry = false;
  std::string host;
};

Result<Source> SourceOf(const std::string& ref) {
  Source s;
  std::string path, tag;
  bool archive = false, layout = false;
  if (ref.rfind("oci-archive:", 0) == 0) {
    path = ref.substr(12);
    archive = true;
  } else if (ref.rfind("oci:", 0) == 0) {
    path = ref.substr(4);
    if (auto c = path.find(':'); c != std::string::npos) {
      tag = path.substr(c + 1);
      path = path.substr(0, c);
    }
    layout = true;
  } else if (!ref.empty() && ref[0] == '/') {
    path = ref;
  } else {
    s.registry = true;
    s.host = ref.substr(0, ref.find('/'));
    s.skopeo_ref = "docker://" + ref;
    s.key = ref;
    return s;
  }
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    return NotFound("image " + ref + ": " + path + ": " + std::strerror(errno));
  }
  if (S_ISDIR(st.st_mode) && !archive) {
    layout = true;
    struct stat ix {};
    if (stat((path + "/index.json").c_str(), &ix) != 0) {
      return FailedPrecondition("image " + ref + ": " + path +
                                " is a directory without index.json, not an OCI layout");
    }
    st = ix;
  } else if (!S_ISREG(st.st_mode) || layout) {
    return FailedPrecondition("image " + ref + ": " + path +
                              (layout ? " is not a directory (an OCI layout)"
                                      : " is neither a file (an OCI archive) nor a directory"));
  }
  s.skopeo_ref = (layout ? "oci:" : "oci-archive:") + path + (tag.empty() ? "" : ":" + tag);
  s.key = ref + "|" + std::to_string(st.st_size) + "|" + std::to_string(st.st_mtim.tv_sec) + "." +
          std::to_string(st.st_mtim.tv_nsec);
  return s;
}

bool Loopback(const std::string& host) {
  std::string h = host.substr(0, host.rfind(':'));
  return h == "localhost" || h.rfind("127.", 0) == 0 || h == "[::1]";
}

// Holds an flock for its lifetime.
class FileLock {
 public:
  FileLock(const std::string& path, int op) {
    fd_ = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd_ < 0) return;
    int rc;
    do {
      rc = flock(fd_, op);
    } while (rc != 0 && errno == EINTR);
    if (rc != 0) {
      close(fd_);
      fd_ = -1;
    }
  }
  ~FileLock() {
    if (fd_ >= 0) close(fd_);
  }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  bool held() const { return fd_ >= 0; }
  int Release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_ = -1;
};

}  // namespace

int RunTool(const std::vector<std::string>& argv, std::string* output) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return -1;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    if (output) *output = argv[0] + ": " + std::strerror(rc);
    return -1;
  }
  char buf[4096];
  for (;;) {
    ssize_t n = read(fds[0], buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (output && output->size() < (1 << 20)) output->append(buf, static_cast<size_t>(n));
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return ShellExitCode(status);
}

Result<CachedImage> ImageCache::Open(const std::string& digest) {
  if (digest.rfind("sha256:", 0) != 0 || digest.size() != 71 ||
      digest.find_first_not_of("0123456789abcdef", 7) != std::string::npos) {
    return NotFound("no image");
  }
  const std::string dir = config_.dir + "/sha256-" + digest.substr(7);
  FileLock use(dir + ".use", LOCK_SH);  // an eviction under way finishes first
  if (!use.held()) return Internal("cannot lock " + dir + ".use: " + std::strerror(errno));
  std::string text;
  if (!IsDir(dir + "/rootfs") || !ReadFile(dir + "/image.json", &text)) {
    return NotFound("image " + digest + " is not in the cache");
  }
  CachedImage img;
  img.digest = digest;
  img.rootfs = dir + "/rootfs";
  Json j = Json::parse(text, nullptr, false);
  if (j.is_object()) {
    for (const Json& e : j.value("env", Json::array())) {
      if (e.is_string()) img.env.push_back(e.get<std::string>());
    }
    img.workdir = j.value("workdir", "");
  }
  (void)utimensat(AT_FDCWD, (dir + "/size").c_str(), nullptr, 0);  // last used: now
  img.use_fd = use.Release();
  return img;
}

Result<std::string> ImageCache::Pull(const std::string& ref, const std::string& tmp,
                                     std::ostream& log) {
  (void)log;
  auto source = SourceOf(ref);
  if (!source.ok()) return source.status();
  std::vector<std::string> argv = {config_.skopeo, "--insecure-policy", "copy", "--quiet"};
  if (source->registry) {
    bool insecure =
        Loopback(source->host) ||
        std::find(config_.insecure_registries.begin(), config_.insecure_registries.end(),
                  source->host) != config_.insecure_registries.end();
    if (insecure) argv.push_back("--src-tls-verify=false");
  }
  argv.push_back(source->skopeo_ref);
  argv.push_back("oci:" + tmp + "/layout:image");
  std::string out;
  int rc = RunTool(argv, &out);
  if (rc != 0) {
    return FailedPrecondition("cannot pull image " + ref + ": " +
                              (rc < 0 ? out : "skopeo: " + ToolOutputTail(out)));
  }
  std::string index;
  if (!ReadFile(tmp + "/layout/index.json", &index)) {
    return FailedPrecondition("cannot pull image " + ref + ": skopeo wrote no index.json");
  }
  Json j = Json::parse(index, nullptr, false);
  std::string digest;
  if (j.is_object() && j.contains("manifests") && j["manifests"].is_array() &&
      !j["manifests"].empty()) {
    digest = j["manifests"][0].value("digest", "");
  }
  if (digest.rfind("sha256:", 0) != 0 || digest.size() != 71) {
    return FailedPrecondition("cannot pull image " + ref + ": no sha256 manifest in its index");
  }
  const std::string entry = config_.dir + "/sha256-" + digest.substr(7);
  if (IsDir(entry)) return digest;  // the same image under another name: no unpack
  out.clear();
  rc = RunTool({config_.umoci, "unpack", "--image", tmp + "/layout:image", tmp + "/bundle"}, &out);
  if (rc != 0) {
    return FailedPrecondition("cannot unpack image " + ref + ": umoci: " + ToolOutputTail(out));
  }
  std::string bundle_config;
  Json image = {{"env", Json::array()}, {"workdir", ""}, {"ref", ref}};
  if (ReadFile(tmp + "/bundle/config.json", &bundle_config)) {
    Json c = Json::parse(bundle_config, nullptr, false);
    if (c.is_object() && c.contains("process") && c["process"].is_object()) {
      image["env"] = c["process"].value("env", Json::array());
      image["workdir"] = c["process"].value("cwd", "");
    }
  }
  const std::string staged = tmp + "/entry";
  if (mkdir(staged.c_str(), 0755) != 0 ||
      rename((tmp + "/bundle/rootfs").c_str(), (staged + "/rootfs").c_str()) != 0) {
    return Internal("cannot stage image " + ref + " in " + staged + ": " + std::strerror(errno));
  }
  if (!WriteWhole(staged + "/image.json", image.dump()) ||
      !WriteWhole(staged + "/size", std::to_string(TreeBytes(staged)))) {
    return Internal("cannot write " + staged + ": " + std::strerror(errno));
  }
  // Complete: it appears under its digest in one rename.
  if (rename(staged.c_str(), entry.c_str()) != 0 && !IsDir(entry)) {
    return Internal("cannot move image " + ref + " into " + entry + ": " + std::strerror(errno));
  }
  return digest;
}

Result<CachedImage> ImageCache::Acquire(const std::string& ref, const std::string& node,
                                        std::ostream& log,
                                        const std::function<void(const std::string&)>& on_pull) {
  for (const char* sub : {"", "/refs", "/locks", "/tmp"}) {
    if (Status st = MakeDirs(config_.dir + sub); !st.ok()) {
      return Internal("image cache " + config_.dir + ": " + st.message());
    }
  }
  auto source = SourceOf(ref);
  if (!source.ok()) return source.status();
  const std::string name = KeyName(source->key);
  const std::string ref_file = config_.dir + "/refs/" + name;
  auto cached = [&]() -> Result<CachedImage> {
    std::string digest;
    if (!ReadFile(ref_file, &digest)) return NotFound("not cached");
    return Open(Trim(digest));
  };
  if (auto img = cached(); img.ok()) return img;
  // One pull per source: whoever waits here finds the image when the lock comes.
  FileLock pulling(config_.dir + "/locks/" + name + ".lock", LOCK_EX);
  if (!pulling.held())
    return Internal("cannot lock the image cache: " + std::string(strerror(errno)));
  if (auto img = cached(); img.ok()) return img;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(config_.dir + "/tmp", ec)) {
    if (e.path().filename().string().rfind(name + ".", 0) == 0) fs::remove_all(e.path(), ec);
  }
  const std::string line = "pulling image " + ref + " on " + node;
  log << "corral: " << line << std::endl;
  if (on_pull) on_pull(line);
  const auto t0 = std::chrono::steady_clock::now();
  const std::string tmp = config_.dir + "/tmp/" + name + "." + std::to_string(getpid());
  if (mkdir(tmp.c_str(), 0700) != 0) {
    return Internal("cannot make " + tmp + ": " + std::strerror(errno));
  }
  auto digest = Pull(ref, tmp, log);
  fs::remove_all(tmp, ec);
  if (!digest.ok()) return digest.status();
  if (!WriteWhole(ref_file, *digest + "\n")) {
    return Internal("cannot write " + ref_file + ": " + std::strerror(errno));
  }
  auto img = Open(*digest);
  if (!img.ok()) return img.status();
  img->pulled = true;
  img->pull_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
          .count();
  log << "corral: pulled image " << ref << " (" << *digest << ") on " << node << " in "
      << img->pull_ms << " ms" << std::endl;
  Evict();
  return img;
}

namespace {

struct Entry {
  std::string dir;
  int64_t bytes = 0;
  int64_t used_at = 0;
};

std::vector<Entry> Entries(const std::string& cache) {
  std::vector<Entry> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(cache, ec)) {
    const std::string n = e.path().filename().string();
    if (n.rfind("sha256-", 0) != 0 || n.find('.') != std::string::npos || !e.is_directory(ec)) {
      continue;
    }
    Entry x;
    x.dir = e.path().string();
    std::string size;
    if (ReadFile(x.dir + "/size", &size)) x.bytes = std::atoll(size.c_str());
    struct stat st {};
    if (stat((x.dir + "/size").c_str(), &st) == 0) {
      x.used_at = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
    }
    out.push_back(x);
  }
  return out;
}

}  // namespace

int ImageCache::Evict() {
  std::vector<Entry> entries = Entries(config_.dir);
  int64_t total = 0;
  for (const Entry& e : entries) total += e.bytes;
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.used_at < b.used_at; });
  int removed = 0;
  for (const Entry& e : entries) {
    if (total <= config_.limit_bytes) break;
    FileLock unused(e.dir + ".use", LOCK_EX | LOCK_NB);
    if (!unused.held()) continue;  // a run uses it
    const std::string trash = config_.dir + "/tmp/evict." + fs::path(e.dir).filename().string() +
                              "." + std::to_string(getpid());
    if (rename(e.dir.c_str(), trash.c_str()) != 0) continue;
    std::error_code ec;
    fs::remove_all(trash, ec);
    total -= e.bytes;
    ++removed;
  }
  return removed;
}

ImageCacheUsage ImageCache::Usage() const {
  ImageCacheUsage u;
  u.limit_bytes = config_.limit_bytes;
  for (const Entry& e : Entries(config_.dir)) {
    u.bytes += e.bytes;
    ++u.images;
  }
  return u;
}

void ImageCache::CleanInterrupted() {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(config_.dir + "/tmp", ec)) {
    const std::string n = e.path().filename().string();
    if (n.rfind("evict.", 0) != 0) {
      FileLock idle(config_.dir + "/locks/" + n.substr(0, n.find('.')) + ".lock",
                    LOCK_EX | LOCK_NB);
      if (!idle.held()) continue;  // a pull under way
    }
    std::error_code rm;
    fs::remove_all(e.path(), rm);
  }
}

}  // namespace corral::agent
