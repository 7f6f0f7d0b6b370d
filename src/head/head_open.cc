// Opening a head: its store, secrets and audit log (Open), and recovering its state from the
// store, or from a standby's warm state, before its leadership starts (Create).
#include <charconv>
#include <filesystem>
#include <limits>

#include "head/change_tail.h"
#include "head/head.h"
#include "store/private_files.h"

namespace corral::head {

namespace {

// What a head starts from: a state, the changes to apply on top (some of which a warm
// state may hold already), and the revision of the store's snapshot rows.
struct StartingState {
  ClusterState state;
  std::vector<Change> tail;
  uint64_t snapshot_revision = 0;
};

Result<StartingState> LoadAll(store::Store& store) {
  auto loaded = store.Load();
  if (!loaded.ok()) return loaded.status();
  auto decoded = DecodeStoredState(std::move(*loaded));
  if (!decoded.ok()) return decoded.status();
  uint64_t rev = decoded->snapshot.revision;
  return StartingState{std::move(decoded->snapshot), std::move(decoded->tail), rev};
}

// A standby taking over: its warm state, and the changes since the snapshot rows (they must
// go into the next rows this head writes), read from the older of the two revisions.
Result<StartingState> TailSinceSnapshot(store::Store& store, ClusterState warm) {
  auto meta = store.ReadMeta(store::kSnapshotRevisionKey);
  if (!meta.ok()) return meta.status();
  uint64_t snapshot = 0;  // as DecodeStoredState reads it: absent is 0, garbage an error
  if (!meta->empty() && std::from_chars(meta->data(), meta->data() + meta->size(), snapshot).ptr !=
                            meta->data() + meta->size()) {
    return Internal(std::string("store meta '") + store::kSnapshotRevisionKey +
                    "': not a number: " + *meta);
  }
  auto tail = ReadChangeTail(store, std::min(snapshot, warm.revision),
                             std::numeric_limits<int32_t>::max(), TailStart::kNext);
  if (!tail.ok()) return tail.status();
  return StartingState{std::move(warm), std::move(*tail), snapshot};
}

// `path` absolute, without "." or ".." parts or a trailing slash.
std::string NormalPath(const std::string& path) {
  std::error_code ec;
  std::filesystem::path p = std::filesystem::absolute(path, ec);
  std::string s = (ec ? std::filesystem::path(path) : p).lexically_normal().string();
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

}  // namespace

Result<std::string> CheckpointRootFor(const std::string& root, const std::string& state_dir) {
  const std::string state = NormalPath(state_dir);
  if (root.empty()) return state + "-checkpoints";
  const std::string given = NormalPath(root);
  if (given == state || given.rfind(state + "/", 0) == 0) {
    return InvalidArgument("--checkpoint-root " + root + " is inside the head's state directory " +
                           state_dir +
                           ", which is the head's user's alone (0700): jobs' users "
                           "could not reach their checkpoints there; choose a directory outside "
                           "it that every node mounts at the same path, or leave the flag out "
                           "for " +
                           state + "-checkpoints");
  }
  return root;
}

Result<std::unique_ptr<Head>> Head::Open(HeadConfig config, const Clock* clock,
                                         std::unique_ptr<store::Store> store,
                                         std::optional<ClusterState> warm) {
  CORRAL_RETURN_IF_ERROR(store::SecureStateDir(config.state_dir));
  auto checkpoint_root = CheckpointRootFor(config.core.checkpoint_root, config.state_dir);
  if (!checkpoint_root.ok()) return checkpoint_root.status();
  config.core.checkpoint_root = *checkpoint_root;
  if (!store) {
    auto opened = store::OpenStore(config.store_url, config.state_dir);
    if (!opened.ok()) return opened.status();
    store = std::move(*opened);
  }
  auto random = std::make_unique<UrandomSource>();
  auto admin = LoadOrCreateToken(config.state_dir + "/admin.token", random->Secret());
  if (!admin.ok()) return admin.status();
  auto join = LoadOrCreateToken(config.state_dir + "/join.token", random->Secret());
  if (!join.ok()) return join.status();
  auto audit = AuditLog::Open(config.state_dir + "/audit.log");
  if (!audit.ok()) return audit.status();
  auto head = Create(std::move(config), std::move(store), clock, random.get(), {*admin, *join},
                     std::move(warm));
  if (head.ok()) {
    (*head)->owned_random_ = std::move(random);
    (*head)->audit_ = std::move(*audit);
  }
  return head;
}

Result<std::unique_ptr<Head>> Head::Create(HeadConfig config, std::unique_ptr<store::Store> store,
                                           const Clock* clock, RandomSource* random,
                                           Tokens bootstrap, std::optional<ClusterState> warm) {
  auto decoded = warm ? TailSinceSnapshot(*store, std::move(*warm)) : LoadAll(*store);
  if (!decoded.ok()) return decoded.status();
  uint64_t snapshot_revision = decoded->snapshot_revision;
  std::unique_ptr<Head> head(new Head(std::move(config), std::move(store), clock, random));
  head->log_ = EditLog(head->config_.durability, snapshot_revision);
  HeadCore& core = head->core_;
  TimeMs now = clock->Now();
  CORRAL_RETURN_IF_ERROR(core.Recover(std::move(decoded->state), decoded->tail, now));
  // The event stream resumes across a restart from the changes the store still holds.
  head->durable_revision_ = core.revision();
  uint64_t keep = head->config_.event_buffer;
  auto recent = ReadChangeTail(*head->store_, core.revision() > keep ? core.revision() - keep : 0,
                               static_cast<int32_t>(keep), TailStart::kAnyLater);
  if (!recent.ok()) return recent.status();
  for (Change& c : *recent) head->recent_.push_back(std::move(c));
  if (!bootstrap.admin.empty() && !core.HasCredentialFor(Caller::Kind::kUser, Role::kAdmin)) {
    TokenRequest admin{head->config_.admin_user, Role::kAdmin, {}, 0};
    CORRAL_RETURN_IF_ERROR(core.IssueToken(Caller::System(), admin, bootstrap.admin, now).status());
  }
  if (!bootstrap.join.empty() && !core.HasCredentialFor(Caller::Kind::kJoin, Role::kUser)) {
    TokenRequest join{"@join", Role::kUser, {}, 0};
    CORRAL_RETURN_IF_ERROR(core.IssueToken(Caller::System(), join, bootstrap.join, now).status());
  }
  // A new leadership; it is durable before any answer (answers wait for the first batch).
  core.Start(now, random->Secret());
  head->epoch_ = core.state().epoch;
  head->tokens_ = std::move(bootstrap);
  std::vector<Change> held;
  for (const auto& [hash, c] : core.state().credentials) held.push_back({0, 0, {}, TokenIssued{c}});
  head->NoteCredentials(held);
  head->Drain();
  if (!head->config_.advertise_url.empty()) {
    head->next_edits_.push_back(store::PutMeta{store::kLeaderUrlKey, head->config_.advertise_url});
  }
  return head;
}

Head::Head(HeadConfig config, std::unique_ptr<store::Store> store, const Clock* clock,
           RandomSource* random)
    : config_(std::move(config)),
      store_(std::move(store)),
      clock_(clock),
      random_(random),
      core_(config_.core),
      log_(config_.durability),
      cluster_series_(config_.cluster_series_step_ms, config_.cluster_series_points) {
  DescribeMetrics();
  if (!config_.core.rdzv_host.empty() && !config_.driven) {
    const std::string& dir = config_.state_dir;
    rdzv_ = std::make_unique<RendezvousStores>(config_.rdzv_python,
                                               dir.empty() ? "" : dir + "/rdzv.log",
                                               dir.empty() ? "" : dir + "/rdzv");
  }
}

}  // namespace corral::head
