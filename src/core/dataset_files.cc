#include "core/dataset_files.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>

namespace corral {
namespace {

namespace fs = std::filesystem;

std::string Hex(const unsigned char* bytes, unsigned int len) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < len; ++i) {
    out += kDigits[bytes[i] >> 4];
    out += kDigits[bytes[i] & 15];
  }
  return out;
}

struct MdFree {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};
using Md = std::unique_ptr<EVP_MD_CTX, MdFree>;

Md NewSha256() {
  Md md(EVP_MD_CTX_new());
  EVP_DigestInit_ex(md.get(), EVP_sha256(), nullptr);
  return md;
}

std::string Finish(EVP_MD_CTX* md) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(md, out, &len);
  return Hex(out, len);
}

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

Status Errno(const std::string& what, const std::string& path) {
  return Status{ErrorCode::kFailedPrecondition, what + " " + path + ": " + std::strerror(errno)};
}

// Reads `from` whole, hashing it, and writes what it read to `out` (-1: nowhere).
Result<ManifestFile> HashStream(const std::string& from, int out, const std::string& to,
                                const std::function<void(int64_t)>& on_bytes) {
  Fd in(open(from.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (in.get() < 0) return Errno("cannot read", from);
  Md md = NewSha256();
  std::vector<char> buf(1 << 20);
  ManifestFile f;
  int64_t reported = 0;
  for (;;) {
    ssize_t n = read(in.get(), buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Errno("cannot read", from);
    if (n == 0) break;
    EVP_DigestUpdate(md.get(), buf.data(), static_cast<size_t>(n));
    for (ssize_t done = 0; out >= 0 && done < n;) {
      ssize_t w = write(out, buf.data() + done, static_cast<size_t>(n - done));
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) return Errno("cannot write", to);
      done += w;
    }
    f.size += n;
    if (on_bytes && f.size - reported >= (4 << 20)) {
      on_bytes(f.size);
      reported = f.size;
    }
  }
  if (on_bytes) on_bytes(f.size);
  f.sha256 = Finish(md.get());
  return f;
}

}  // namespace

struct Sha256Stream::Impl {
  Md md = NewSha256();
};
Sha256Stream::Sha256Stream() : impl_(std::make_unique<Impl>()) {}
Sha256Stream::~Sha256Stream() = default;
void Sha256Stream::Update(const void* data, size_t size) {
  EVP_DigestUpdate(impl_->md.get(), data, size);
}
std::string Sha256Stream::FinishHex() { return Finish(impl_->md.get()); }

std::string Sha256Hex(const std::string& bytes) {
  Md md = NewSha256();
  EVP_DigestUpdate(md.get(), bytes.data(), bytes.size());
  return Finish(md.get());
}

std::string ManifestDigest(const std::vector<ManifestFile>& files) {
  Md md = NewSha256();
  for (const ManifestFile& f : files) {
    const std::string line = f.sha256 + " " + std::to_string(f.size) + " " + f.path + "\n";
    EVP_DigestUpdate(md.get(), line.data(), line.size());
  }
  return "sha256:" + Finish(md.get());
}

Result<Manifest> ScanDataset(const std::string& root) {
  std::error_code ec;
  if (!fs::is_directory(root, ec)) {
    return Status{ErrorCode::kInvalidArgument,
                  "field 'source': " + root + " is not a directory" +
                      (ec ? std::string(" (") + ec.message() + ")" : "")};
  }
  Manifest m;
  fs::recursive_directory_iterator it(root, ec), end;
  if (ec) return InvalidArgument("field 'source': cannot list " + root + ": " + ec.message());
  for (; it != end; it.increment(ec)) {
    if (ec) return InvalidArgument("field 'source': cannot list " + root + ": " + ec.message());
    const fs::file_status st = it->symlink_status(ec);
    if (fs::is_directory(st)) continue;
    const std::string rel = it->path().lexically_relative(root).generic_string();
    if (!fs::is_regular_file(st)) {
      return InvalidArgument("field 'source': " + rel + " in " + root +
                             " is not a regular file (links and devices are refused)");
    }
    auto f = HashStream(it->path().string(), -1, "", {});
    if (!f.ok()) return InvalidArgument("field 'source': " + f.status().message());
    f->path = rel;
    m.bytes += f->size;
    m.files.push_back(std::move(*f));
  }
  std::sort(m.files.begin(), m.files.end(),
            [](const ManifestFile& a, const ManifestFile& b) { return a.path < b.path; });
  m.digest = ManifestDigest(m.files);
  return m;
}

Result<ManifestFile> CopyAndHash(const std::string& from, const std::string& to,
                                 const std::function<void(int64_t)>& on_bytes) {
  Fd out(open(to.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (out.get() < 0) return Errno("cannot create", to);
  auto f = HashStream(from, out.get(), to, on_bytes);
  return f;
}

}  // namespace corral
