#include "core/dataset_source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <set>
#include <vector>

#include "core/dataset.h"
#include "core/fetch_libraries.h"

namespace corral {
namespace {

Status ArchiveError(const std::string& path, const std::string& why) {
  return Status{ErrorCode::kFailedPrecondition, "archive " + path + ": " + why};
}

// A descriptor closed when it goes.
class SourceFd {
 public:
  explicit SourceFd(int fd) : fd_(fd) {}
  ~SourceFd() {
    if (fd_ >= 0) close(fd_);
  }
  SourceFd(const SourceFd&) = delete;
  SourceFd& operator=(const SourceFd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// A member's name as a relative path of plain components ("./" and "." dropped): "" for the
// archive's root itself; an error for an absolute name or one with a ".." component.
Result<std::string> MemberPath(const std::string& name) {
  if (name.empty() || name[0] == '/') return InvalidArgument("an absolute or empty name");
  std::string out;
  size_t from = 0;
  while (from <= name.size()) {
    const size_t slash = std::min(name.find('/', from), name.size());
    const std::string part = name.substr(from, slash - from);
    from = slash + 1;
    if (part.empty() || part == ".") continue;
    if (part == "..") return InvalidArgument("a '..' component");
    out += (out.empty() ? "" : "/") + part;
  }
  return out;
}

// The directories and files an archive holds so far, to refuse a name used twice or as both
// a file and a directory before anything is written for it.
class MemberTree {
 public:
  Status AddDir(const std::string& rel) {
    if (rel.empty()) return Status::Ok();
    CORRAL_RETURN_IF_ERROR(AddParents(rel));
    if (files_.count(rel)) return InvalidArgument("a directory named like a file before it");
    dirs_.insert(rel);
    return Status::Ok();
  }
  Status AddFile(const std::string& rel) {
    CORRAL_RETURN_IF_ERROR(AddParents(rel));
    if (files_.count(rel)) return InvalidArgument("a file that appears twice");
    if (dirs_.count(rel)) return InvalidArgument("a file named like a directory before it");
    files_.insert(rel);
    return Status::Ok();
  }
  // Parents in order, shortest first: what the caller creates before writing `rel`.
  static std::vector<std::string> Parents(const std::string& rel) {
    std::vector<std::string> out;
    for (size_t slash = rel.find('/'); slash != std::string::npos;
         slash = rel.find('/', slash + 1)) {
      out.push_back(rel.substr(0, slash));
    }
    return out;
  }

 private:
  Status AddParents(const std::string& rel) {
    for (const std::string& p : Parents(rel)) {
      if (files_.count(p)) return InvalidArgument("a path under the file " + p);
      dirs_.insert(p);
    }
    return Status::Ok();
  }
  std::set<std::string> dirs_;
  std::set<std::string> files_;
};

const char* MemberKind(const ArchiveCalls& ar, archive_entry* e) {
  if (ar.entry_hardlink(e) != nullptr) return "a hard link";
  switch (ar.entry_filetype(e)) {
    case AE_IFREG:
      return nullptr;
    case AE_IFDIR:
      return nullptr;
    case AE_IFLNK:
      return "a symbolic link";
    case AE_IFCHR:
    case AE_IFBLK:
      return "a device";
    case AE_IFIFO:
      return "a FIFO";
    default:
      return "not a regular file or directory";
  }
}

Status MakeMemberDirs(const std::string& into, const std::vector<std::string>& rels) {
  for (const std::string& rel : rels) {
    const std::string full = into + "/" + rel;
    if (mkdir(full.c_str(), 0700) == 0) continue;
    struct stat st {};
    if (errno != EEXIST || lstat(full.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      return InvalidArgument("cannot create the directory " + rel + ": " + std::strerror(errno));
    }
  }
  return Status::Ok();
}

// Reads the current member's data, hashing it and writing it to `out` (-1: nowhere).
Result<ManifestFile> ReadMember(const ArchiveCalls& ar, archive* a, int out, const std::string& rel,
                                int64_t* done, const std::function<void(int64_t)>& on_bytes) {
  Sha256Stream hash;
  ManifestFile f;
  f.path = rel;
  std::vector<char> buf(1 << 20);
  int64_t reported = *done;
  for (;;) {
    const la_ssize_t n = ar.read_data(a, buf.data(), buf.size());
    if (n < 0) return InvalidArgument(std::string("cannot read it: ") + ar.error_string(a));
    if (n == 0) break;
    hash.Update(buf.data(), static_cast<size_t>(n));
    for (la_ssize_t w = 0; out >= 0 && w < n;) {
      const ssize_t k = write(out, buf.data() + w, static_cast<size_t>(n - w));
      if (k < 0 && errno == EINTR) continue;
      if (k < 0) return InvalidArgument(std::string("cannot write it: ") + std::strerror(errno));
      w += k;
    }
    f.size += n;
    *done += n;
    if (on_bytes && *done - reported >= (4 << 20)) {
      on_bytes(*done);
      reported = *done;
    }
  }
  f.sha256 = hash.FinishHex();
  return f;
}

// One member: checked, its directories made and its data read (and written under `into`).
Status ReadEntry(const ArchiveCalls& ar, archive* a, archive_entry* e, const std::string& into,
                 MemberTree& tree, Manifest& m, int64_t* done,
                 const std::function<void(int64_t)>& on_bytes) {
  const char* raw = ar.entry_pathname(e);
  const std::string name = raw ? raw : "";
  auto refuse = [&](const std::string& why) {
    return InvalidArgument("member '" + name + "' is " + why +
                           " (a dataset holds regular files and directories under its root only)");
  };
  if (const char* kind = MemberKind(ar, e)) return refuse(kind);
  auto rel = MemberPath(name);
  if (!rel.ok()) return refuse(rel.status().message());
  const bool dir = ar.entry_filetype(e) == AE_IFDIR;
  Status placed = dir ? tree.AddDir(*rel) : tree.AddFile(*rel);
  if (!placed.ok()) return refuse(placed.message());
  if (!dir && rel->empty()) return refuse("a file named like the root");
  if (!into.empty()) {
    std::vector<std::string> make = MemberTree::Parents(*rel);
    if (dir && !rel->empty()) make.push_back(*rel);
    CORRAL_RETURN_IF_ERROR(MakeMemberDirs(into, make));
  }
  if (dir) return Status::Ok();
  int fd = -1;
  if (!into.empty()) {
    const std::string to = into + "/" + *rel;
    fd = open(to.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) return InvalidArgument("cannot create " + *rel + ": " + std::strerror(errno));
  }
  SourceFd out(fd);
  auto f = ReadMember(ar, a, out.get(), *rel, done, on_bytes);
  if (!f.ok()) return InvalidArgument("member '" + name + "': " + f.status().message());
  m.bytes += f->size;
  m.files.push_back(std::move(*f));
  return Status::Ok();
}

struct DownloadState {
  int fd = -1;
  int64_t bytes = 0;
  int write_errno = 0;
  const CurlCalls* calls = nullptr;
  CURL* curl = nullptr;
  const std::function<void(int64_t, int64_t)>* on_bytes = nullptr;
  int64_t reported = 0;
};

size_t WriteDownload(char* data, size_t size, size_t count, void* user) {
  auto* st = static_cast<DownloadState*>(user);
  const size_t n = size * count;
  for (size_t w = 0; w < n;) {
    const ssize_t k = write(st->fd, data + w, n - w);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) {
      st->write_errno = errno;
      return 0;  // makes curl stop with CURLE_WRITE_ERROR
    }
    w += static_cast<size_t>(k);
  }
  st->bytes += static_cast<int64_t>(n);
  if (*st->on_bytes && st->bytes - st->reported >= (4 << 20)) {
    curl_off_t total = -1;
    st->calls->easy_getinfo(st->curl, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &total);
    (*st->on_bytes)(st->bytes, total > 0 ? total : 0);
    st->reported = st->bytes;
  }
  return n;
}

}  // namespace

Result<Manifest> ReadArchive(const std::string& path, const std::string& into,
                             const std::function<void(int64_t)>& on_bytes) {
  auto lib = Libarchive();
  if (!lib.ok()) return ArchiveError(path, lib.status().message());
  const ArchiveCalls& ar = **lib;
  std::unique_ptr<archive, decltype(ar.read_free)> a(ar.read_new(), ar.read_free);
  ar.support_filter_gzip(a.get());
  ar.support_format_tar(a.get());
  if (ar.open_filename(a.get(), path.c_str(), 1 << 20) != ARCHIVE_OK) {
    return ArchiveError(path, ar.error_string(a.get()));
  }
  Manifest m;
  MemberTree tree;
  int64_t done = 0;
  for (;;) {
    archive_entry* e = nullptr;
    const int r = ar.next_header(a.get(), &e);
    if (r == ARCHIVE_EOF) break;
    if (r != ARCHIVE_OK && r != ARCHIVE_WARN) {
      return ArchiveError(path, ar.error_string(a.get()));
    }
    Status s = ReadEntry(ar, a.get(), e, into, tree, m, &done, on_bytes);
    if (!s.ok()) return ArchiveError(path, s.message());
  }
  if (on_bytes) on_bytes(done);
  std::sort(m.files.begin(), m.files.end(),
            [](const ManifestFile& x, const ManifestFile& y) { return x.path < y.path; });
  m.digest = ManifestDigest(m.files);
  return m;
}

Result<int64_t> DownloadUrl(const std::string& url, const std::string& to,
                            const std::function<void(int64_t, int64_t)>& on_bytes) {
  auto lib = Libcurl();
  if (!lib.ok()) {
    return Status{ErrorCode::kUnavailable,
                  "cannot download " + url + ": " + lib.status().message()};
  }
  const CurlCalls& cc = **lib;
  SourceFd out(open(to.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (out.get() < 0) {
    return Status{ErrorCode::kFailedPrecondition,
                  "cannot create " + to + ": " + std::strerror(errno)};
  }
  std::unique_ptr<CURL, decltype(cc.easy_cleanup)> curl(cc.easy_init(), cc.easy_cleanup);
  if (!curl) return Status{ErrorCode::kInternal, "cannot start a download of " + url};
  DownloadState st;
  st.fd = out.get();
  st.calls = &cc;
  st.curl = curl.get();
  st.on_bytes = &on_bytes;
  char error[CURL_ERROR_SIZE] = {};
  CURL* c = curl.get();
  cc.easy_setopt(c, CURLOPT_URL, url.c_str());
  cc.easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  cc.easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  cc.easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
  cc.easy_setopt(c, CURLOPT_MAXREDIRS, 5L);
  cc.easy_setopt(c, CURLOPT_FAILONERROR, 1L);
  cc.easy_setopt(c, CURLOPT_NOSIGNAL, 1L);  // the agent's staging threads
  cc.easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 30L);
  cc.easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);  // a stalled source fails, never hangs
  cc.easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 60L);
  cc.easy_setopt(c, CURLOPT_USERAGENT, "corral");
  cc.easy_setopt(c, CURLOPT_ERRORBUFFER, error);
  cc.easy_setopt(c, CURLOPT_WRITEFUNCTION, WriteDownload);
  cc.easy_setopt(c, CURLOPT_WRITEDATA, &st);
  const CURLcode rc = cc.easy_perform(c);
  if (rc != CURLE_OK) {
    std::string why = error[0] ? error : cc.easy_strerror(rc);
    if (st.write_errno != 0) why = "cannot write " + to + ": " + std::strerror(st.write_errno);
    return Status{ErrorCode::kUnavailable, "cannot download " + url + ": " + why};
  }
  if (on_bytes) on_bytes(st.bytes, st.bytes);
  return st.bytes;
}

Result<Manifest> ScanSource(const std::string& source, const std::string& scratch_dir) {
  auto field = [](const Status& s) {
    return Status{ErrorCode::kInvalidArgument, "field 'source': " + s.message()};
  };
  switch (SourceKindOf(source)) {
    case DatasetSourceKind::kDirectory:
      return ScanDataset(source);
    case DatasetSourceKind::kArchive: {
      auto m = ReadArchive(source, "");
      if (!m.ok()) return field(m.status());
      return m;
    }
    case DatasetSourceKind::kUrl:
      break;
  }
  std::string dir = scratch_dir + "/corral-dataset.XXXXXX";
  if (mkdtemp(dir.data()) == nullptr) {
    return field(
        Status{ErrorCode::kFailedPrecondition,
               "cannot create a directory in " + scratch_dir + ": " + std::strerror(errno)});
  }
  const std::string tmp = dir + "/archive";
  auto got = DownloadUrl(source, tmp);
  Result<Manifest> m = got.ok() ? ReadArchive(tmp, "") : Result<Manifest>(got.status());
  unlink(tmp.c_str());
  rmdir(dir.c_str());
  if (!m.ok()) return field(m.status());
  return m;
}

}  // namespace corral
