#include "agent/node/fake_node_env.h"

#include <chrono>
#include <iterator>

namespace corral::agent::testing {

FakeNodeClock::FakeNodeClock(TimeMs start) : now_(start) {}

TimeMs FakeNodeClock::Now() const {
  std::lock_guard l(mu_);
  return now_;
}

void FakeNodeClock::Advance(DurationMs d) {
  std::lock_guard l(mu_);
  now_ += d;
  moved_.notify_all();
}

int FakeNodeClock::WaitingLocked() const {
  return static_cast<int>(std::distance(deadlines_.upper_bound(now_), deadlines_.end()));
}

bool FakeNodeClock::BlockUntilWaiting(int n) const {
  std::unique_lock l(mu_);
  return moved_.wait_for(l, std::chrono::seconds(10), [&] { return WaitingLocked() >= n; });
}

bool FakeNodeClock::WaitFor(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                            DurationMs ms, const std::function<bool()>& done) const {
  TimeMs deadline = 0;
  {
    std::lock_guard l(mu_);
    deadline = now_ + ms;
    deadlines_.insert(deadline);
    moved_.notify_all();
  }
  bool finished = false;
  for (;;) {
    if (done()) {
      finished = true;
      break;
    }
    if (Now() >= deadline) break;
    // Advance cannot notify the caller's `cv` (it does not hold the caller's mutex, so the
    // wake could be lost): look again after a millisecond of real time.
    cv.wait_for(lock, std::chrono::milliseconds(1));
  }
  std::lock_guard l(mu_);
  deadlines_.erase(deadlines_.find(deadline));
  moved_.notify_all();
  return finished;
}

Result<ProgramOutcome> FakeProgramRunner::Run(const std::vector<std::string>& argv,
                                              DurationMs) const {
  std::lock_guard l(mu_);
  runs_.push_back(argv);
  if (!script_.empty()) {
    last_ = script_.front();
    script_.pop_front();
  }
  return last_;
}

void FakeProgramRunner::Answer(ProgramOutcome outcome) {
  std::lock_guard l(mu_);
  script_.push_back(std::move(outcome));
}

int FakeProgramRunner::Runs() const {
  std::lock_guard l(mu_);
  return static_cast<int>(runs_.size());
}

std::vector<std::string> FakeProgramRunner::LastArgv() const {
  std::lock_guard l(mu_);
  return runs_.empty() ? std::vector<std::string>{} : runs_.back();
}

Result<std::string> MemoryFileSystem::Read(const std::string& path) const {
  std::lock_guard l(mu_);
  auto it = files_.find(path);
  if (it == files_.end()) return NotFound(path + ": no such file");
  return it->second;
}

Status MemoryFileSystem::Replace(const std::string& path, const std::string&,
                                 const std::string& text) {
  std::lock_guard l(mu_);
  files_[path] = text;
  ++writes_;
  return Status::Ok();
}

Status MemoryFileSystem::Remove(const std::string& path) {
  std::lock_guard l(mu_);
  files_.erase(path);
  return Status::Ok();
}

Status MemoryFileSystem::MakeDirs(const std::string&) { return Status::Ok(); }

std::map<std::string, std::string> MemoryFileSystem::Files() const {
  std::lock_guard l(mu_);
  return files_;
}

int MemoryFileSystem::Writes() const {
  std::lock_guard l(mu_);
  return writes_;
}

}  // namespace corral::agent::testing
