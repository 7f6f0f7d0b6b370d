// What a job asks of a container (docs/containers.md): the image its tasks run in, the host
// paths it mounts, where it starts. Value types shared by the spec parser, the head's orders and
// the agent's runtime; the checks here are the spec's (names the field, changes nothing).
#pragma once

#include <string>
#include <vector>

#include "core/status.h"

namespace corral {

// A host path mounted into the container.
struct ContainerMount {
  std::string source;       // absolute, on the node
  std::string destination;  // absolute, in the container
  bool read_only = false;
  bool operator==(const ContainerMount&) const = default;
};

struct ContainerSpec {
  std::string image;  // canonical reference (ParseImageRef's Canonical()); empty: no container
  std::vector<ContainerMount> mounts;
  std::string workdir;     // in the container; empty: the job's workdir (if mounted) or "/"
  bool writable = false;   // the image's root may be written (a layer of the run's own)
  bool mount_home = true;  // the owner's home directory at the same path
  bool empty() const { return image.empty(); }
  bool operator==(const ContainerSpec&) const = default;
};

// Where an image comes from.
struct ImageRef {
  enum class Kind { kRegistry, kOciArchive, kOciLayout, kPath };
  Kind kind = Kind::kRegistry;
  // kRegistry: "host[:port]", "name/with/parts", and a tag or a digest ("sha256:<64 hex>").
  std::string registry, repository, tag, digest;
  // kOciArchive ("oci-archive:/x.tar"), kOciLayout ("oci:/dir[:tag]"), kPath (a plain
  // absolute path: an archive if it is a file, a layout if a directory, decided on the node).
  std::string path;
  std::string Canonical() const;
};

// Accepted: "registry:5000/name:tag", "registry/name@sha256:<hex>", "docker://...", a name
// without a registry ("ubuntu:22.04" is docker.io/library/ubuntu:22.04), "oci-archive:/path",
// "oci:/path[:tag]", or an absolute path. `field` names the field in errors.
Result<ImageRef> ParseImageRef(const std::string& field, const std::string& text);

// "SRC:DST[:ro|rw]", both absolute. `field` names the field in errors.
Result<ContainerMount> ParseMount(const std::string& field, const std::string& text);
std::string FormatMount(const ContainerMount& m);
// A mount's paths: absolute, no "..", no ':' or ',', not the container's root or its
// /proc, /sys or /dev.
Status ValidateMount(const std::string& field, const ContainerMount& m);

}  // namespace corral
