// Datasets (docs/datasets.md): a directory or an archive on shared storage, or an archive at an
// HTTP(S) URL, registered once under a name and version with a manifest (each file's relative path,
// size and SHA-256) whose digest names its content. Jobs declare the datasets they read; each node
// keeps one verified copy of a dataset per content digest in its cache, shared by every job that
// uses it.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/time.h"

namespace corral {

using Json = nlohmann::json;

// A registered dataset: where it comes from and what its manifest says.
struct Dataset {
  std::string name;     // IsGoodName
  std::string version;  // given, or the digest's first kShortDigest hex digits
  std::string source;   // a directory or archive path on shared storage, or a URL (dataset_kind.h)
  std::string digest;   // "sha256:<64 hex>" of the manifest (ManifestDigest)
  int64_t files = 0;
  int64_t bytes = 0;
  std::string owner;  // who added it
  TimeMs added_at = 0;
  bool operator==(const Dataset&) const = default;
};

constexpr size_t kShortDigest = 12;

// A job's use of a dataset: what it asked for (name, version, mount) and, once the head has
// accepted the job, what the name stood for then (digest, source, files, bytes), so that the
// agents fetch exactly that content.
struct DatasetRef {
  std::string name;
  std::string version;  // "": the name's latest version
  std::string mount;    // where a container sees it; "": /datasets/NAME
  std::string digest;   // resolved by the head at submission
  std::string source;
  int64_t files = 0;
  int64_t bytes = 0;
  bool operator==(const DatasetRef&) const = default;
};

Json ToJson(const Dataset& d);
Result<Dataset> DatasetFromJson(const Json& j);  // the stored form (trusted)
// A dataset as POST /v1/datasets sends it: {"name", "source", "version", "digest", "files",
// "bytes"}; each field checked, the wrong one named. The owner and time are the head's.
Result<Dataset> ParseDataset(const Json& body);

// A dataset as listed: the record, whether jobs use it, and the nodes whose caches hold it.
struct DatasetView {
  Dataset dataset;
  std::vector<uint64_t> users;     // jobs (ids) not over that declare it, ascending
  std::vector<std::string> nodes;  // nodes whose cache holds it (as their agents last said)
  std::string State() const { return users.empty() ? "idle" : "in use"; }
};
Json ToJson(const DatasetView& v);
Result<DatasetView> DatasetViewFromJson(const Json& j);

Json ToJson(const DatasetRef& r);
Result<DatasetRef> DatasetRefFromJson(const Json& j);
// "NAME[@VERSION][:MOUNT]" (corral submit --dataset, #SBATCH --dataset); errors name `field`.
Result<DatasetRef> ParseDatasetRef(const std::string& field, const std::string& text);
// A "datasets" value of a spec: an array of "NAME[@V][:MOUNT]" strings or of objects
// {"name", "version", "mount"}.
Result<std::vector<DatasetRef>> ParseDatasetRefs(const std::string& field, const Json& v);

// The environment variable that tells a job where a dataset is: CORRAL_DATASET_<NAME>, the
// name upper-cased with every other character than a letter or digit as '_'.
std::string DatasetEnvName(const std::string& name);
// Where a container sees a dataset when its reference names no mount.
std::string DefaultDatasetMount(const std::string& name);

}  // namespace corral
