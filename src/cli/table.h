// Human output of the client commands: aligned tables and short durations, sizes and times.
// Pure functions, any thread.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/time.h"

namespace corral::cli {

// A table of left-aligned columns, two spaces apart, widths computed from the cells. The last
// column is not padded, so no line ends in spaces. Cells should not contain newlines.
class Table {
 public:
  explicit Table(std::vector<std::string> headers) : headers_(std::move(headers)) {}
  // REQUIRES: cells.size() == number of headers.
  void AddRow(std::vector<std::string> cells);
  size_t rows() const { return rows_.size(); }
  std::string Render() const;

 private:
  std::vector<std::string> headers_;
  std::vector<std::vector<std::string>> rows_;
};

// "45s", "2m13s", "1h02m", "3d04h"; a negative duration reads as "0s".
std::string FormatAge(DurationMs ms);
// "0", "512M", "16G", "1.5G", "2T".
std::string FormatMemoryMb(int64_t mb);
// "1", "0.5", "2.25" from milli-cores.
std::string FormatCpus(int32_t cpu_milli);
// "2025-11-22 06:34:12" in local time, or UTC when utc; "-" for 0.
std::string FormatTimestamp(TimeMs t, bool utc);
// "k=v,k2=v2", or "-" when empty.
std::string FormatLabels(const std::map<std::string, std::string>& labels);
// Joins with a separator.
std::string Join(const std::vector<std::string>& parts, const std::string& sep);
// A command line for display: arguments with spaces or quotes are single-quoted.
std::string FormatCommand(const std::vector<std::string>& argv);

}  // namespace corral::cli
