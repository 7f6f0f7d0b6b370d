// The node's image cache (docs/containers.md): images unpacked once per node, keyed by their
// manifest digest, shared read-only by every run of them (each run writes to an overlay of its
// own). Used by the container task helper (container.h), as root, from any number of processes
// at once; all coordination is by file locks in the cache directory:
//
//   CACHE/sha256-<hex>/rootfs        the unpacked root file system (complete: the directory is
//   CACHE/sha256-<hex>/image.json    renamed into place only once everything in it is written)
//   CACHE/sha256-<hex>/size          its size in bytes; its mtime is the last use
//   CACHE/sha256-<hex>.use           held shared (flock) by every run using the image
//   CACHE/refs/<hash of the source>  the digest a source (reference, archive, layout) gave
//   CACHE/locks/<hash>.lock          one pull per source at a time; the others wait for it
//   CACHE/tmp/                       pulls in progress (a pull's own lock says it is live)
//
// Sources: a registry reference (skopeo, over HTTPS, or HTTP for the registries named
// insecure), an OCI archive or an OCI layout directory. A tag is looked up once: later runs
// use the digest it gave (as Kubernetes' IfNotPresent), so a cached image costs no network.
#pragma once

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "core/status.h"

namespace corral::agent {

struct ImageCacheConfig {
  std::string dir;                               // CACHE
  int64_t limit_bytes = 20LL << 30;              // evict unused images beyond this
  std::vector<std::string> insecure_registries;  // host:port reached over plain HTTP
  std::string skopeo = "/usr/bin/skopeo";
  std::string umoci = "/usr/bin/umoci";
};

struct CachedImage {
  std::string digest;            // "sha256:<hex>" of its manifest
  std::string rootfs;            // read-only: the runs' overlays take it as their lower layer
  std::vector<std::string> env;  // the image's Env
  std::string workdir;           // its WorkingDir ("" if none)
  int use_fd = -1;      // the shared lock on CACHE/sha256-<hex>.use; the caller keeps it open
  bool pulled = false;  // this call pulled it (else it was cached)
  int64_t pull_ms = 0;
};

// What the cache holds, for the agent's report.
struct ImageCacheUsage {
  int64_t bytes = 0;
  int32_t images = 0;
  int64_t limit_bytes = 0;
};

class ImageCache {
 public:
  explicit ImageCache(ImageCacheConfig config) : config_(std::move(config)) {}

  // The image `ref` (a canonical reference, container_spec.h) unpacked and locked in use.
  // `log` gets "pulling image REF on NODE" before a pull. Errors name the image and why.
  // `on_pull` is called with that line too, when a pull starts.
  Result<CachedImage> Acquire(const std::string& ref, const std::string& node, std::ostream& log,
                              const std::function<void(const std::string&)>& on_pull = {});

  // Removes least recently used images that no run holds until the cache is within its limit.
  // Returns how many it removed.
  int Evict();

  ImageCacheUsage Usage() const;

  // Removes what interrupted pulls left in tmp/ (those whose lock nobody holds).
  void CleanInterrupted();

 private:
  Result<std::string> Pull(const std::string& ref, const std::string& layout, std::ostream& log);
  Result<CachedImage> Open(const std::string& digest);

  ImageCacheConfig config_;
};

// Runs argv (no shell), its output (both streams) into *output; the exit status (-1 if it
// could not start). Any thread.
int RunTool(const std::vector<std::string>& argv, std::string* output);

}  // namespace corral::agent
