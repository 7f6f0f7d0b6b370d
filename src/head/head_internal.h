// What the head shell's files share (head.cc, head_commands.cc): how a command's caller is
// admitted and how its answer waits until what it changed is durable.
#pragma once

#include <memory>
#include <optional>

#include "head/head.h"

namespace corral::head {

// The answer to every request after the store failed a commit.
Status StoreFailed(const Status& st);

// Calls `each` on the retired jobs `q` selects, reading q.limit rows at a time, until `each`
// returns false or the rows run out. On the archive thread (Head::ReadRetired).
Status ForEachRetiredJob(const store::Store& store, store::RetiredJobsQuery q,
                         const std::function<bool(Job&)>& each);

template <typename T>
void Head::Reply(Callback<T> done, Result<T> result) {
  uint64_t revision = core_.revision();
  if (revision <= durable_revision_ && !failed_) {
    // All it saw is durable already: no need to wait for the commit in flight, which may be
    // a long one holding no changes (snapshot rows) or others' changes it did not see.
    reply_revision_ = revision;
    return done(std::move(result));
  }
  auto shared = std::make_shared<Callback<T>>(std::move(done));
  AfterDurable(
      [this, shared, revision, result = std::move(result)]() mutable {
        reply_revision_ = revision;
        (*shared)(std::move(result));
      },
      [shared](const Status& st) { (*shared)(StoreFailed(st)); });
}

template <typename T>
std::optional<Caller> Head::Admit(const Presented& presented, TimeMs now, bool for_agents,
                                  Callback<T>& done) {
  if (failed_) {
    done(StoreFailed(Unavailable("an earlier commit failed")));
    return std::nullopt;
  }
  auto who = AuthenticateFor(presented, now, for_agents);
  if (!who.ok()) {
    Reply<T>(std::move(done), who.status());
    return std::nullopt;
  }
  return *who;
}

}  // namespace corral::head
