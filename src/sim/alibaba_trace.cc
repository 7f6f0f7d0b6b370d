#include "sim/alibaba_trace.h"

#include <charconv>
#include <fstream>
#include <map>
#include <sstream>

namespace corral::sim {
namespace {

std::vector<std::string> SplitCsv(const std::string& line) {
  std::vector<std::string> out;
  std::string cell;
  std::istringstream in(line);
  while (std::getline(in, cell, ',')) out.push_back(cell);
  if (!line.empty() && line.back() == ',') out.emplace_back();
  return out;
}

template <typename T>
Status ParseCell(const std::string& path, int line, const char* column, const std::string& text,
                 T* out) {
  auto r = std::from_chars(text.data(), text.data() + text.size(), *out);
  if (r.ec != std::errc{} || r.ptr != text.data() + text.size() || *out < 0) {
    return InvalidArgument(path + ":" + std::to_string(line) + ": column '" + column + "': got \"" +
                           text + "\", want an integer >= 0");
  }
  return Status::Ok();
}

// Reads the CSV's rows after its header, which must start with `header`.
Result<std::vector<std::vector<std::string>>> Rows(const std::string& path,
                                                   const std::string& header, size_t columns) {
  std::ifstream in(path);
  if (!in) return NotFound("cannot open " + path);
  std::string line;
  if (!std::getline(in, line) || line.rfind(header, 0) != 0) {
    return InvalidArgument(path + ": want a header starting \"" + header + "\"");
  }
  std::vector<std::vector<std::string>> rows;
  int n = 1;
  while (std::getline(in, line)) {
    ++n;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    std::vector<std::string> cells = SplitCsv(line);
    if (cells.size() < columns) {
      return InvalidArgument(path + ":" + std::to_string(n) + ": want at least " +
                             std::to_string(columns) + " columns, got " +
                             std::to_string(cells.size()));
    }
    rows.push_back(std::move(cells));
  }
  return rows;
}

}  // namespace

Result<std::vector<AlibabaNode>> ReadAlibabaNodes(const std::string& path) {
  auto rows = Rows(path, "sn,cpu_milli,memory_mib,gpu,model", 5);
  if (!rows.ok()) return rows.status();
  std::vector<AlibabaNode> out;
  int line = 1;
  for (const auto& r : *rows) {
    ++line;
    AlibabaNode n;
    n.name = r[0];
    CORRAL_RETURN_IF_ERROR(ParseCell(path, line, "cpu_milli", r[1], &n.cpu_milli));
    CORRAL_RETURN_IF_ERROR(ParseCell(path, line, "memory_mib", r[2], &n.memory_mib));
    CORRAL_RETURN_IF_ERROR(ParseCell(path, line, "gpu", r[3], &n.gpus));
    n.model = r[4];
    out.push_back(std::move(n));
  }
  return out;
}

Result<std::vector<AlibabaTask>> ReadAlibabaTasks(const std::string& path) {
  auto rows = Rows(path, "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec", 5);
  if (!rows.ok()) return rows.status();
  std::vector<AlibabaTask> out;
  int line = 1;
  for (const auto& r : *rows) {
    ++line;
    AlibabaTask t;
    t.name = r[0];
    CORRAL_RETURN_IF_ERROR(ParseCell(path, line, "cpu_milli", r[1], &t.cpu_milli));
    CORRAL_RETURN_IF_ERROR(ParseCell(path, line, "memory_mib", r[2], &t.memory_mib));
    CORRAL_RETURN_IF_ERROR(ParseCell(path, line, "num_gpu", r[3], &t.num_gpu));
    CORRAL_RETURN_IF_ERROR(ParseCell(path, line, "gpu_milli", r[4], &t.gpu_milli));
    if (t.gpu_milli > 1000) {
      return InvalidArgument(path + ":" + std::to_string(line) +
                             ": column 'gpu_milli': want at most 1000 (a share of one GPU)");
    }
    if (r.size() > 5) t.gpu_spec = r[5];
    out.push_back(std::move(t));
  }
  return out;
}

int64_t AlibabaGpuMemoryMib(const std::string& model) {
  static const std::map<std::string, int64_t> kMib = {
      {"P100", 16384}, {"T4", 15360}, {"V100M16", 16384}, {"V100M32", 32768}, {"A10", 24576}};
  auto it = kMib.find(model);
  return it == kMib.end() ? 32768 : it->second;
}

}  // namespace corral::sim
