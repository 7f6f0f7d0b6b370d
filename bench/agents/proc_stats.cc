#include "agents/proc_stats.h"

#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

namespace corral::bench {

std::optional<ProcUsage> ReadProcUsage(int pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return std::nullopt;
  // The command name (field 2) may hold spaces: fields are counted after its ')'.
  size_t close = line.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream rest(line.substr(close + 2));
  std::string field;
  ProcUsage u;
  int64_t utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14) utime = std::stoll(field);
    if (i == 15) stime = std::stoll(field);
  }
  u.cpu_s = static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) u.rss_kb = std::stoll(line.substr(6));
    if (line.rfind("VmHWM:", 0) == 0) u.peak_rss_kb = std::stoll(line.substr(6));
  }
  return u;
}

}  // namespace corral::bench
