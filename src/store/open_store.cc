// The one place that maps a --store URL to a backend.
#include <string_view>

#include "store/postgres_store.h"
#include "store/store.h"

namespace corral::store {

Status CheckSchemaVersion(int64_t stored) {
  if (stored > kSchemaVersion) {
    return FailedPrecondition("store schema version " + std::to_string(stored) +
                              " is newer than this corral (" + std::to_string(kSchemaVersion) +
                              "); upgrade corral");
  }
  if (stored < 0) {
    return Internal("store schema version " + std::to_string(stored) + " is not valid");
  }
  return Status::Ok();
}

Status CheckSynchronousCommit(const std::string& field, const std::string& value) {
  if (value == "on" || value == "remote_apply" || value == "remote_write") return Status::Ok();
  return InvalidArgument(field + ": got '" + value +
                         "', want on, remote_apply or remote_write (local and off acknowledge "
                         "commits no standby holds, which a failover loses)");
}

Result<std::unique_ptr<Store>> OpenStore(const std::string& url, const std::string& state_dir,
                                         const StoreOptions& options) {
  std::string_view u = url;
  if (u.empty()) return OpenSqliteStore(state_dir + "/corral.db");
  if (u.starts_with("sqlite:")) {
    std::string path(u.substr(7));
    if (path.starts_with("//")) path = path.substr(2);  // sqlite://PATH, as people also write it
    if (path.empty()) return InvalidArgument("--store: 'sqlite:' needs a path, as in sqlite:PATH");
    return OpenSqliteStore(path);
  }
  if (u.starts_with("postgres://") || u.starts_with("postgresql://")) {
    auto pg = OpenPostgresStore(url, options);
    if (!pg.ok()) return pg.status();
    return std::unique_ptr<Store>(std::move(*pg));
  }
  // Not echoed whole: a URL can carry a password.
  std::string scheme(u.substr(0, u.find(':')));
  return InvalidArgument("--store: unsupported store '" + scheme +
                         "'; accepted: sqlite:PATH, postgres://USER@HOST:PORT/DB or "
                         "postgresql://USER@HOST:PORT/DB");
}

}  // namespace corral::store
