// The one way the change log is read back (a standby's copy, a head taking over, the events a
// restarted head resumes, the simulator reading its head): records decoded into changes, each
// checked to be the next revision. A gap is the log damaged or truncated under the reader, an
// error, never a shorter tail that a reader would apply as if complete.
#pragma once

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "head/change.h"
#include "store/store.h"

namespace corral::head {

// A record's change, whose own revision must be the record's.
Result<Change> DecodeChangeRecord(const store::ChangeRecord& record);

enum class TailStart {
  kNext,      // the first must be after + 1: the reader continues a state at `after`
  kAnyLater,  // the first may be later: the reader wants only the recent ones, and the log
              // may be truncated below them
};

// The changes after revision `after`, at most `limit`, contiguous from the first.
Result<std::vector<Change>> ReadChangeTail(store::Store& store, uint64_t after, int32_t limit,
                                           TailStart start);

}  // namespace corral::head
