// A dataset's manifest, read from its files: every regular file under a directory, its path
// relative to it, its size and its SHA-256, and the digest of the whole list. The CLI makes it
// when a dataset is added; the agents make it again from what they copied, and a copy whose
// digest differs from the registered one is never used.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"

namespace corral {

struct ManifestFile {
  std::string path;  // relative to the dataset's root, '/'-separated
  int64_t size = 0;
  std::string sha256;  // 64 hex digits
  bool operator==(const ManifestFile&) const = default;
};

struct Manifest {
  std::vector<ManifestFile> files;  // sorted by path
  int64_t bytes = 0;
  std::string digest;  // "sha256:<hex>" of the lines "<sha256> <size> <path>\n", in order
};

// SHA-256 of a byte string, 64 lowercase hex digits.
std::string Sha256Hex(const std::string& bytes);

// SHA-256 of bytes given in pieces (an archive's member as it is read).
class Sha256Stream {
 public:
  Sha256Stream();
  ~Sha256Stream();
  Sha256Stream(const Sha256Stream&) = delete;
  Sha256Stream& operator=(const Sha256Stream&) = delete;
  void Update(const void* data, size_t size);
  std::string FinishHex();  // 64 lowercase hex digits; once

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The manifest of the directory `root`: regular files only (symbolic links are refused, so
// that a dataset never reaches outside its root). Errors name the path and why.
Result<Manifest> ScanDataset(const std::string& root);

// The digest of a file list (Manifest::digest).
std::string ManifestDigest(const std::vector<ManifestFile>& files);

// Copies `from` to `to` (created 0644; not synced: a cache syncs a whole copy once, with
// syncfs, before it publishes it), returning its size and SHA-256. `on_bytes` is
// called with the bytes copied so far, every few MiB.
Result<ManifestFile> CopyAndHash(const std::string& from, const std::string& to,
                                 const std::function<void(int64_t)>& on_bytes = {});

}  // namespace corral
