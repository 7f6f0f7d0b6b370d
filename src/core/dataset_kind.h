// What a dataset's source is, told by its text (docs/datasets.md, "Sources"): an http:// or
// https:// URL (an archive served over HTTP), an absolute path ending in .tar, .tar.gz or .tgz
// (an archive on shared storage), or any other absolute path (a directory on shared storage).
#pragma once

#include <string>

#include "core/status.h"

namespace corral {

enum class DatasetSourceKind { kDirectory, kArchive, kUrl };
DatasetSourceKind SourceKindOf(const std::string& source);
// Whether a path or URL names an archive Corral unpacks (.tar, .tar.gz, .tgz).
bool IsArchiveName(const std::string& path);
// Whether a source's text can name a source at all (errors name the field 'source'): an
// absolute path (without "://"), or an http(s) URL with a host whose path names an archive.
Status CheckSourceText(const std::string& source);

}  // namespace corral
