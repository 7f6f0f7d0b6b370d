#include "cli/table.h"

#include <algorithm>
#include <cstdio>
#include <ctime>

#include "core/status.h"

namespace corral::cli {

void Table::AddRow(std::vector<std::string> cells) {
  CORRAL_CHECK(cells.size() == headers_.size(), "table row has " + std::to_string(cells.size()) +
                                                    " cells, want " +
                                                    std::to_string(headers_.size()));
  rows_.push_back(std::move(cells));
}

std::string Table::Render() const {
  std::vector<size_t> width(headers_.size(), 0);
  auto measure = [&](const std::vector<std::string>& row) {
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  };
  measure(headers_);
  for (const auto& r : rows_) measure(r);
  std::string out;
  auto emit = [&](const std::vector<std::string>& row) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line.append(width[i] - row[i].size() + 2, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line;
    out += '\n';
  };
  emit(headers_);
  for (const auto& r : rows_) emit(r);
  return out;
}

std::string FormatAge(DurationMs ms) {
  if (ms < 0) ms = 0;
  int64_t s = ms / 1000;
  char buf[48];
  if (s < 60) {
    std::snprintf(buf, sizeof buf, "%llds", static_cast<long long>(s));
  } else if (s < 3600) {
    std::snprintf(buf, sizeof buf, "%lldm%02llds", static_cast<long long>(s / 60),
                  static_cast<long long>(s % 60));
  } else if (s < 86400) {
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", static_cast<long long>(s / 3600),
                  static_cast<long long>(s % 3600 / 60));
  } else {
    std::snprintf(buf, sizeof buf, "%lldd%02lldh", static_cast<long long>(s / 86400),
                  static_cast<long long>(s % 86400 / 3600));
  }
  return buf;
}

namespace {
// One decimal place, dropped when it is zero: 1.5, 2.
std::string Decimal(double x) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.1f", x);
  std::string s = buf;
  if (s.size() > 2 && s.compare(s.size() - 2, 2, ".0") == 0) s.resize(s.size() - 2);
  return s;
}
}  // namespace

std::string FormatMemoryMb(int64_t mb) {
  if (mb <= 0) return "0";
  constexpr int64_t kG = 1024, kT = 1024 * 1024;
  if (mb >= kT) return Decimal(static_cast<double>(mb) / kT) + "T";
  if (mb >= kG) return Decimal(static_cast<double>(mb) / kG) + "G";
  return std::to_string(mb) + "M";
}

std::string FormatCpus(int32_t cpu_milli) {
  std::string s = std::to_string(cpu_milli / 1000);
  int32_t frac = cpu_milli % 1000;
  if (frac == 0) return s;
  char buf[8];
  std::snprintf(buf, sizeof buf, "%03d", frac);
  std::string f = buf;
  while (!f.empty() && f.back() == '0') f.pop_back();
  return s + "." + f;
}

std::string FormatTimestamp(TimeMs t, bool utc) {
  if (t <= 0) return "-";
  std::time_t secs = static_cast<std::time_t>(t / 1000);
  std::tm tm{};
  if (utc) {
    gmtime_r(&secs, &tm);
  } else {
    localtime_r(&secs, &tm);
  }
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

std::string FormatLabels(const std::map<std::string, std::string>& labels) {
  if (labels.empty()) return "-";
  std::string out;
  for (const auto& [k, v] : labels) {
    if (!out.empty()) out += ',';
    out += k + "=" + v;
  }
  return out;
}

std::string Join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += sep;
    out += parts[i];
  }
  return out;
}

std::string FormatCommand(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& a : argv) {
    if (!out.empty()) out += ' ';
    bool plain = !a.empty() && a.find_first_not_of(
                                   "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOP"
                                   "QRSTUVWXYZ0123456789-_./=:,+@%") == std::string::npos;
    if (plain) {
      out += a;
      continue;
    }
    out += '\'';
    for (char c : a) {
      if (c == '\'') {
        out += "'\\''";
      } else {
        out += c;
      }
    }
    out += '\'';
  }
  return out;
}

}  // namespace corral::cli
