#include "core/time.h"

#include <chrono>
#include <cstdio>
#include <ctime>

namespace corral {

TimeMs SteadyClock::Now() const {
  using namespace std::chrono;
  return duration_cast<milliseconds>(steady_clock::now().time_since_epoch()).count();
}

TimeMs SystemClock::Now() const {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

std::string FormatUtc(TimeMs t) {
  std::time_t secs = static_cast<std::time_t>(t >= 0 ? t / 1000 : (t - 999) / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);  // reads no zone: UTC is arithmetic
  char buf[80];          // room for any int in each field: the compiler checks the bound
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
  return buf;
}

}  // namespace corral
