// The node's dataset cache (docs/datasets.md): one verified copy of each dataset version,
// keyed by its manifest digest, shared by every run that uses it. Used by the agent's stager
// (dataset_stager.h) from several threads at once, and safe against other processes using
// the same directory; all coordination is by file locks in the cache directory:
//
//   CACHE/data/<hex>/          a complete copy (renamed into place only once every file is
//                              written, its digest checked and the file system synced)
//   CACHE/data/<hex>.use       held shared (flock) by every run that uses it: a pin
//   CACHE/data/<hex>.size      its size in bytes; the .use file's mtime is its last use
//   CACHE/locks/<hex>.lock     one fetch per dataset version at a time; the others wait
//   CACHE/tmp/<hex>.<pid>.<tid> fetches in progress (a fetch's lock says it is live)
//   CACHE/fetches              a line per fetch done: "<hex> <bytes> <ms> <start> <end>" (start
//                              and end: Unix ms, the fetch's own time, without its queueing)
//
// Sources (core/dataset_source.h): a directory, or an archive on shared storage, unpacked into
// tmp/; or an archive at an http(s) URL, downloaded into tmp/
// (CACHE/tmp/<hex>.<pid>.<tid>.download) and unpacked beside it. Every file is checked against the
// manifest's digest before publish.
//
// The copy keeps each source file's owner and permission bits (set-id bits dropped; an
// archive's members all take the archive file's), so the cache lets nobody read what the
// source would not let them. A fetch also first checks, as the job's owner, that the owner may
// read every file of the source (for an archive: the archive). A URL has no owner: anyone who
// may declare the dataset reads it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "agent/data/source_gate.h"
#include "agent/node/run_as.h"
#include "core/dataset.h"
#include "core/status.h"

namespace corral::agent {

struct DatasetCacheConfig {
  std::string dir;          // CACHE
  int64_t limit_bytes = 0;  // 0: no limit
  // Over high x limit, whole unpinned datasets go, least recently used first, down to low x
  // limit (Fluid's defaults).
  double high_watermark = 0.95;
  double low_watermark = 0.7;
  // How fetches share each source's bandwidth (source_gate.h).
  SourceGateConfig sources;
};

struct StagedDataset {
  std::string path;      // CACHE/data/<hex>: where the job reads it
  int use_fd = -1;       // the pin; the caller closes it when the run is over
  bool fetched = false;  // this call fetched it (else it was cached)
  int64_t fetch_ms = 0;
  int64_t source_bytes = 0;  // read from the source: its files', its archive's, or downloaded
};

struct DatasetCacheUsage {
  int64_t bytes = 0;
  int32_t datasets = 0;
  int64_t limit_bytes = 0;
  std::vector<std::string> digests;  // "sha256:<hex>" of every complete copy
};

class DatasetCache {
 public:
  // `clock`: what the pacing of sources' fetches is measured on (source_gate.h); it must
  // outlive the cache.
  DatasetCache(DatasetCacheConfig config, const NodeClock& clock);

  // The dataset `ref` (resolved: digest and source set) in the cache and pinned. `who`: the
  // job's owner, whose right to read the source is checked first (nullptr: not checked, for
  // an agent that runs every job as itself). `progress` gets the bytes fetched so far; `queued`
  // the fetch's place in its source's line while it waits for it (source_gate.h).
  // `cap_bytes_per_second`: the head's cap on this fetch (its share of the source's
  // cluster-wide budget), applied beside the node's own pacing; 0: none. Errors name the
  // dataset and its source.
  Result<StagedDataset> Acquire(const DatasetRef& ref, const UnixIdentity* who,
                                const std::function<void(int64_t)>& progress = {},
                                const std::function<void(int32_t)>& queued = {},
                                int64_t cap_bytes_per_second = 0);

  // Over the high watermark, removes whole unpinned datasets, least recently used first,
  // until under the low one. Returns how many it removed.
  int Evict();

  DatasetCacheUsage Usage() const;

  // Removes what interrupted fetches left in tmp/ (those whose lock nobody holds).
  void CleanInterrupted();

 private:
  // Reports a fetch's progress and paces its reads from the source: `progress` gets the bytes
  // fetched so far (for the job's note), `source_read` the bytes read from the source so far.
  struct FetchProgress {
    std::function<void(int64_t)> progress;
    std::function<void(int64_t)> source_read;
  };
  // Fetches into tmp/, checks and publishes it; the bytes read from the source.
  Result<int64_t> Fetch(const DatasetRef& ref, const std::string& hex, const FetchProgress& p);
  // The source's content written under `into` (by its kind) and checked against the digest.
  Result<int64_t> Fill(const DatasetRef& ref, const std::string& into, const FetchProgress& p);
  Status CopyTree(const DatasetRef& ref, const std::string& into, const FetchProgress& p);
  Result<int64_t> Download(const DatasetRef& ref, const std::string& into, const FetchProgress& p);

  DatasetCacheConfig config_;
  std::unique_ptr<SourceGate> gate_;  // shared by every thread that fetches
};

// Hex of a "sha256:<hex>" digest ("" when it is not one).
std::string DigestHex(const std::string& digest);

}  // namespace corral::agent
