// Durable state behind one interface (DESIGN §9). The head is the only writer: it builds
// StateEdits, commits them, and only then acts on them (write-ahead). SQLite is the embedded
// default; PostgreSQL comes with the HA issue behind the same interface.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "core/job.h"
#include "core/node.h"
#include "core/status.h"

namespace corral::store {

struct PutJob {
  Job job;
};
struct PutNode {
  Node node;
};
struct PutQueue {
  QueueConfig queue;
};
struct PutMeta {
  std::string key;
  std::string value;
};
struct DeleteNode {
  std::string name;
};
using StateEdit = std::variant<PutJob, PutNode, PutQueue, PutMeta, DeleteNode>;

struct StoredState {
  std::vector<Job> jobs;  // ascending id
  std::vector<Node> nodes;
  std::vector<QueueConfig> queues;
  std::map<std::string, std::string> meta;
};

// Not thread-safe: one caller at a time (the head's commit thread).
class Store {
 public:
  virtual ~Store() = default;
  virtual Result<StoredState> Load() = 0;
  // Applies all edits in one transaction; returns once they are durable.
  virtual Status Commit(const std::vector<StateEdit>& edits) = 0;
};

// Opens (creating if needed) DIR/corral.db in WAL mode with full fsync on commit.
Result<std::unique_ptr<Store>> OpenSqliteStore(const std::string& path);

}  // namespace corral::store
