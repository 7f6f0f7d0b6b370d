#include "agent/data/dataset_cache.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "agent/node/act_as.h"
#include "agent/node/file_util.h"
#include "core/dataset_files.h"
#include "core/dataset_source.h"

namespace corral::agent {
namespace {

namespace fs = std::filesystem;

Status DatasetError(const DatasetRef& ref, const std::string& why) {
  return FailedPrecondition("dataset " + ref.name + " from " + ref.source + ": " + why);
}

std::string CacheErrnoText() { return std::strerror(errno); }

// A flock on a file of the cache, released (and the descriptor closed) when it goes.
class CacheFileLock {
 public:
  CacheFileLock(const std::string& path, int op) {
    fd_ = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd_ < 0) return;
    int r;
    while ((r = flock(fd_, op)) != 0 && errno == EINTR) {
    }
    if (r != 0) {  // LOCK_NB and held by another, or no locks here
      int saved = errno;
      close(fd_);
      fd_ = -1;
      errno = saved;
    }
  }
  ~CacheFileLock() {
    if (fd_ >= 0) close(fd_);
  }
  CacheFileLock(const CacheFileLock&) = delete;
  CacheFileLock& operator=(const CacheFileLock&) = delete;
  bool ok() const { return fd_ >= 0; }
  int Release() { return std::exchange(fd_, -1); }

 private:
  int fd_ = -1;
};

// Whether `who` may read every file under `root` (and enter every directory): each is opened
// with their file-system identity, as a job of theirs would.
Status CheckReadable(const DatasetRef& ref, const UnixIdentity& who) {
  const DatasetSourceKind kind = SourceKindOf(ref.source);
  if (kind == DatasetSourceKind::kUrl) return Status::Ok();  // no owner: anyone who declares it
  ActAs as(who);
  if (kind == DatasetSourceKind::kArchive) {
    int fd = open(ref.source.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
      return DatasetError(ref, "user " + who.name + " may not read it: " + CacheErrnoText());
    }
    close(fd);
    return Status::Ok();
  }
  int dir = open(ref.source.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0)
    return DatasetError(ref, "user " + who.name + " cannot read it: " + CacheErrnoText());
  close(dir);
  std::error_code ec;
  fs::recursive_directory_iterator it(ref.source, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    int fd = open(it->path().c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) {
      return DatasetError(ref, "user " + who.name + " may not read " +
                                   it->path().lexically_relative(ref.source).string() + ": " +
                                   CacheErrnoText());
    }
    close(fd);
  }
  if (ec) return DatasetError(ref, "user " + who.name + " cannot list it: " + ec.message());
  return Status::Ok();
}

// The source's owner and permission bits (set-id bits dropped) on the copy.
void KeepOwnership(const std::string& from, const std::string& to) {
  struct stat st {};
  if (stat(from.c_str(), &st) != 0) return;
  if (geteuid() == 0) (void)lchown(to.c_str(), st.st_uid, st.st_gid);
  (void)chmod(to.c_str(), st.st_mode & 0777);
}

bool SyncDir(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = syncfs(fd) == 0;
  close(fd);
  return ok;
}

// What was read matches the registered manifest, or the source changed since it was added.
Status CheckManifestDigest(const DatasetRef& ref, size_t files, const std::string& digest) {
  if (digest == ref.digest) return Status::Ok();
  return DatasetError(ref, "its content changed since it was added (" + std::to_string(files) +
                               " files, digest " + digest + ", registered " + ref.digest +
                               "); add it again");
}

// An unpacked archive's files and directories all take one owner and the archive's permission
// bits (directories also searchable where readable), as a directory's copy keeps its files'.
void GiveUnpackedOwnership(const std::string& root, uid_t uid, gid_t gid, mode_t mode) {
  const mode_t file_mode = mode & 0666;
  const mode_t dir_mode = file_mode | ((file_mode & 0444) >> 2);
  std::error_code ec;
  const bool chown_too = geteuid() == 0;
  for (fs::recursive_directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    const bool dir = it->is_directory(ec);
    if (chown_too) (void)lchown(it->path().c_str(), uid, gid);
    (void)chmod(it->path().c_str(), dir ? dir_mode : file_mode);
  }
  if (chown_too) (void)lchown(root.c_str(), uid, gid);
  (void)chmod(root.c_str(), dir_mode);
}

int64_t UnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int64_t ReadSize(const std::string& path) {
  std::ifstream in(path);
  int64_t v = 0;
  return (in >> v) ? v : 0;
}

}  // namespace

std::string DigestHex(const std::string& digest) {
  const std::string prefix = "sha256:";
  if (digest.size() != prefix.size() + 64 || digest.compare(0, prefix.size(), prefix) != 0) {
    return "";
  }
  const std::string hex = digest.substr(prefix.size());
  return hex.find_first_not_of("0123456789abcdef") == std::string::npos ? hex : "";
}

DatasetCache::DatasetCache(DatasetCacheConfig config, const NodeClock& clock)
    : config_(std::move(config)), gate_(std::make_unique<SourceGate>(config_.sources, clock)) {
  std::error_code ec;
  for (const char* d : {"/data", "/locks", "/tmp"}) fs::create_directories(config_.dir + d, ec);
  // Jobs pass through to their datasets' copies; only the agent lists or changes the cache.
  chmod(config_.dir.c_str(), 0711);
  chmod((config_.dir + "/data").c_str(), 0711);
}

Result<StagedDataset> DatasetCache::Acquire(const DatasetRef& ref, const UnixIdentity* who,
                                            const std::function<void(int64_t)>& progress,
                                            const std::function<void(int32_t)>& queued,
                                            int64_t cap_bytes_per_second) {
  const std::string hex = DigestHex(ref.digest);
  if (hex.empty()) return DatasetError(ref, "no valid digest ('" + ref.digest + "')");
  if (who != nullptr) CORRAL_RETURN_IF_ERROR(CheckReadable(ref, *who));
  const std::string data = config_.dir + "/data/" + hex;
  // Pinned first: an eviction (which takes the pin's lock exclusively) waits for no one, and
  // one under way finishes before this goes on.
  CacheFileLock pin(data + ".use", LOCK_SH);
  if (!pin.ok())
    return DatasetError(ref, "cannot pin it in " + config_.dir + ": " + CacheErrnoText());
  (void)utimensat(AT_FDCWD, (data + ".use").c_str(), nullptr, 0);  // its last use
  StagedDataset out;
  out.path = data;
  if (!IsDir(data)) {
    CacheFileLock fetching(config_.dir + "/locks/" + hex + ".lock", LOCK_EX);
    if (!fetching.ok()) return DatasetError(ref, "cannot lock its fetch: " + CacheErrnoText());
    if (!IsDir(data)) {  // nobody fetched it while this waited
      const std::string source = SourceOfDataset(ref.source);
      SourceGate::Slot slot = gate_->Enter(source, queued);  // in line behind its source's others
      const auto start = std::chrono::steady_clock::now();
      const int64_t started_ms = UnixMs();
      int64_t paced = 0;
      double capped_until_ms = 0;  // this fetch's own bucket, for the head's cap
      FetchProgress p{progress, [&](int64_t read_so_far) {
                        const int64_t more = read_so_far - paced;
                        gate_->Pace(source, more);
                        gate_->PaceFetch(&capped_until_ms, more, cap_bytes_per_second);
                        paced = std::max(paced, read_so_far);
                      }};
      auto read = Fetch(ref, hex, p);
      if (!read.ok()) return read.status();
      out.source_bytes = *read;
      out.fetched = true;
      out.fetch_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::steady_clock::now() - start)
                         .count();
      std::ofstream(config_.dir + "/fetches", std::ios::app)
          << hex << " " << ref.bytes << " " << out.fetch_ms << " " << started_ms << " " << UnixMs()
          << "\n";
    }
  }
  out.use_fd = pin.Release();
  return out;
}

Result<int64_t> DatasetCache::Fetch(const DatasetRef& ref, const std::string& hex,
                                    const FetchProgress& progress) {
  std::error_code ec;
  // Holding the fetch lock: whatever tmp/ holds for this digest is a dead fetch's.
  for (const auto& e : fs::directory_iterator(config_.dir + "/tmp", ec)) {
    if (e.path().filename().string().rfind(hex + ".", 0) == 0) fs::remove_all(e.path(), ec);
  }
  const std::string tmp = config_.dir + "/tmp/" + hex + "." + std::to_string(getpid()) + "." +
                          std::to_string(syscall(SYS_gettid));
  if (mkdir(tmp.c_str(), 0700) != 0) {
    return DatasetError(ref, "cannot create " + tmp + ": " + CacheErrnoText());
  }
  auto read = Fill(ref, tmp, progress);
  Status copied = read.status();
  if (copied.ok() && !SyncDir(tmp)) copied = DatasetError(ref, "cannot sync the copy");
  if (copied.ok()) {
    WriteTextFile(config_.dir + "/data/" + hex + ".size", std::to_string(ref.bytes) + "\n");
    if (rename(tmp.c_str(), (config_.dir + "/data/" + hex).c_str()) != 0) {
      copied = DatasetError(ref, "cannot publish the copy: " + CacheErrnoText());
    } else {
      SyncDir(config_.dir + "/data");
    }
  }
  if (!copied.ok()) {
    fs::remove_all(tmp, ec);
    return copied;
  }
  return *read;
}

Result<int64_t> DatasetCache::Fill(const DatasetRef& ref, const std::string& into,
                                   const FetchProgress& progress) {
  switch (SourceKindOf(ref.source)) {
    case DatasetSourceKind::kDirectory: {
      CORRAL_RETURN_IF_ERROR(CopyTree(ref, into, progress));
      return ref.bytes;
    }
    case DatasetSourceKind::kArchive: {
      struct stat st {};
      if (stat(ref.source.c_str(), &st) != 0) {
        return DatasetError(ref, "cannot read it: " + CacheErrnoText());
      }
      auto m = ReadArchive(ref.source, into, [&](int64_t n) {
        progress.source_read(n);
        if (progress.progress) progress.progress(n);
      });
      if (!m.ok()) return DatasetError(ref, m.status().message());
      CORRAL_RETURN_IF_ERROR(CheckManifestDigest(ref, m->files.size(), m->digest));
      GiveUnpackedOwnership(into, st.st_uid, st.st_gid, st.st_mode);
      return static_cast<int64_t>(st.st_size);
    }
    case DatasetSourceKind::kUrl:
      break;
  }
  return Download(ref, into, progress);
}

// Downloads the archive next to `into` (its name plus ".download"), then unpacks it there. The
// download is the first half of the progress, unpacking the second.
Result<int64_t> DatasetCache::Download(const DatasetRef& ref, const std::string& into,
                                       const FetchProgress& p) {
  const std::string file = into + ".download";
  auto got = DownloadUrl(ref.source, file, [&](int64_t bytes, int64_t total) {
    p.source_read(bytes);
    if (p.progress && total > 0) p.progress(ref.bytes * bytes / total / 2);
  });
  Result<Manifest> m = got.ok() ? ReadArchive(file, into,
                                              [&](int64_t n) {
                                                if (p.progress) p.progress(ref.bytes / 2 + n / 2);
                                              })
                                : Result<Manifest>(got.status());
  unlink(file.c_str());
  if (!m.ok()) return DatasetError(ref, m.status().message());
  CORRAL_RETURN_IF_ERROR(CheckManifestDigest(ref, m->files.size(), m->digest));
  GiveUnpackedOwnership(into, geteuid(), getegid(), 0644);
  return *got;
}

Status DatasetCache::CopyTree(const DatasetRef& ref, const std::string& into,
                              const FetchProgress& progress) {
  std::vector<ManifestFile> files;
  std::vector<std::pair<std::string, std::string>> dirs;  // (source, copy), set last
  int64_t done = 0;
  std::error_code ec;
  fs::recursive_directory_iterator it(ref.source, ec), end;
  if (ec) return DatasetError(ref, "cannot list it: " + ec.message());
  for (; it != end; it.increment(ec)) {
    if (ec) return DatasetError(ref, "cannot list it: " + ec.message());
    const std::string rel = it->path().lexically_relative(ref.source).generic_string();
    const std::string to = into + "/" + rel;
    const fs::file_status st = it->symlink_status(ec);
    if (fs::is_directory(st)) {
      if (mkdir(to.c_str(), 0700) != 0) return DatasetError(ref, "cannot create " + to);
      dirs.emplace_back(it->path().string(), to);
      continue;
    }
    if (!fs::is_regular_file(st)) return DatasetError(ref, rel + " is not a regular file");
    auto f = CopyAndHash(it->path().string(), to, [&](int64_t n) {
      progress.source_read(done + n);
      if (progress.progress) progress.progress(done + n);
    });
    if (!f.ok()) return DatasetError(ref, f.status().message());
    KeepOwnership(it->path().string(), to);
    done += f->size;
    f->path = rel;
    files.push_back(std::move(*f));
  }
  std::sort(files.begin(), files.end(),
            [](const ManifestFile& a, const ManifestFile& b) { return a.path < b.path; });
  CORRAL_RETURN_IF_ERROR(CheckManifestDigest(ref, files.size(), ManifestDigest(files)));
  for (auto d = dirs.rbegin(); d != dirs.rend(); ++d) KeepOwnership(d->first, d->second);
  KeepOwnership(ref.source, into);
  return Status::Ok();
}

int DatasetCache::Evict() {
  if (config_.limit_bytes <= 0) return 0;
  DatasetCacheUsage u = Usage();
  if (u.bytes <= static_cast<int64_t>(config_.high_watermark * config_.limit_bytes)) return 0;
  const int64_t target = static_cast<int64_t>(config_.low_watermark * config_.limit_bytes);
  // Least recently used first: the .use file's mtime.
  std::vector<std::pair<int64_t, std::string>> order;
  for (const std::string& digest : u.digests) {
    const std::string hex = DigestHex(digest);
    struct stat st {};
    int64_t used = 0;
    if (stat((config_.dir + "/data/" + hex + ".use").c_str(), &st) == 0) {
      used = st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
    }
    order.emplace_back(used, hex);
  }
  std::sort(order.begin(), order.end());
  int removed = 0;
  for (const auto& [used, hex] : order) {
    if (u.bytes <= target) break;
    const std::string data = config_.dir + "/data/" + hex;
    CacheFileLock unpinned(data + ".use", LOCK_EX | LOCK_NB);  // held while the copy goes
    if (!unpinned.ok()) continue;                              // a run uses it
    const int64_t size = ReadSize(data + ".size");
    const std::string gone = config_.dir + "/tmp/evicted." + hex;
    std::error_code ec;
    if (rename(data.c_str(), gone.c_str()) != 0) continue;
    fs::remove_all(gone, ec);
    u.bytes -= size;
    ++removed;
  }
  return removed;
}

DatasetCacheUsage DatasetCache::Usage() const {
  DatasetCacheUsage u;
  u.limit_bytes = config_.limit_bytes;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(config_.dir + "/data", ec)) {
    if (!e.is_directory(ec)) continue;
    const std::string hex = e.path().filename().string();
    u.bytes += ReadSize(e.path().string() + ".size");
    ++u.datasets;
    u.digests.push_back("sha256:" + hex);
  }
  std::sort(u.digests.begin(), u.digests.end());
  return u;
}

void DatasetCache::CleanInterrupted() {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(config_.dir + "/tmp", ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("evicted.", 0) == 0) {
      fs::remove_all(e.path(), ec);
      continue;
    }
    const std::string hex = name.substr(0, name.find('.'));
    CacheFileLock lock(config_.dir + "/locks/" + hex + ".lock", LOCK_EX | LOCK_NB);
    if (lock.ok()) fs::remove_all(e.path(), ec);
  }
}

}  // namespace corral::agent
