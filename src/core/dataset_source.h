// Reading a dataset's source where it lives (docs/datasets.md, "Sources"): a directory or an
// archive (.tar, .tar.gz, .tgz; libarchive) on shared storage, or an archive served over
// HTTP(S) (libcurl). The CLI reads a source once to make its manifest when the dataset is
// added; the agents read it again to fill their caches, and check what they read against it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "core/dataset_files.h"
#include "core/dataset_kind.h"
#include "core/status.h"

namespace corral {

// Reads the archive at `path` (tar, gzip-compressed or not): the manifest of its members. With
// `into` (an existing, empty directory) it also writes every member there, hashing it as it
// goes. A dataset is regular files and directories only: a member that is a symbolic or hard
// link, a device or a FIFO, whose name is absolute or has a ".." component, or that appears
// twice, is refused with an error naming it, and nothing is written outside `into`. Files are
// created 0600, directories 0700 (the caller gives them their owner and mode). `on_bytes` gets
// the bytes of members read so far, every few MiB.
Result<Manifest> ReadArchive(const std::string& path, const std::string& into,
                             const std::function<void(int64_t)>& on_bytes = {});

// Downloads `url` (http or https, following redirects to http or https only) into the new file
// `to` (0600). Returns the bytes received. A status of 400 or more, a connection that fails or
// stalls for a minute is an error naming the URL. `on_bytes` gets the bytes received so far
// and the whole size when the server says it (else 0).
Result<int64_t> DownloadUrl(const std::string& url, const std::string& to,
                            const std::function<void(int64_t, int64_t)>& on_bytes = {});

// The manifest of any source (SourceKindOf): a directory's files, an archive's members, or the
// members of the archive at a URL, downloaded into a temporary file under `scratch_dir` that
// is removed before this returns. Errors name the field 'source'.
Result<Manifest> ScanSource(const std::string& source, const std::string& scratch_dir);

}  // namespace corral
