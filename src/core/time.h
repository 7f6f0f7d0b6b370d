// Time as a value: milliseconds since the Unix epoch. The scheduler takes it as a parameter;
// only SystemClock reads the wall clock.
#pragma once

#include <cstdint>
#include <string>

namespace corral {

using TimeMs = int64_t;  // milliseconds since epoch (or since simulation start)
using DurationMs = int64_t;

constexpr DurationMs kSecond = 1000;
constexpr DurationMs kMinute = 60 * kSecond;
constexpr DurationMs kHour = 60 * kMinute;
constexpr DurationMs kDay = 24 * kHour;

class Clock {
 public:
  virtual ~Clock() = default;
  virtual TimeMs Now() const = 0;
};

class SystemClock final : public Clock {
 public:
  TimeMs Now() const override;
};

// Milliseconds since an arbitrary start that never steps back (CLOCK_MONOTONIC): for leases and
// timeouts, which a wall clock set back by NTP must not stretch.
class SteadyClock final : public Clock {
 public:
  TimeMs Now() const override;
};

// `t` in UTC as ISO 8601 to the second ("2026-11-28T18:30:00Z"): a time in a message that
// readers in any zone can place. A pure function of `t`, so the scheduler may use it.
std::string FormatUtc(TimeMs t);

}  // namespace corral
