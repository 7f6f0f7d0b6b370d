// The head's state directory and files are its own: corral.db and its WAL hold every job's
// environment (secrets included) and the tokens' hashes, so nobody else on the host may read
// them. Checked and repaired at every start, since a directory from an older corral or made by
// hand may be wider.
#pragma once

#include <string>

#include "core/status.h"

namespace corral::store {

// Creates `dir` (and missing parents) 0700, narrows an existing one to 0700, and narrows every
// regular file directly in it to 0600. An error names the path and what failed.
[[nodiscard]] Status SecureStateDir(const std::string& dir);

// Creates `path` 0600 if missing and narrows it (and SQLite's -wal, -shm and -journal beside
// it, which SQLite creates with the database's own mode) to 0600 if it exists.
[[nodiscard]] Status SecureDatabaseFile(const std::string& path);

}  // namespace corral::store
