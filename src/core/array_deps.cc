#include "core/array_deps.h"

#include <algorithm>
#include <charconv>
#include <set>

namespace corral {
namespace {

bool ParseNum(std::string_view s, int64_t* out) {
  auto r = std::from_chars(s.data(), s.data() + s.size(), *out);
  return !s.empty() && r.ec == std::errc{} && r.ptr == s.data() + s.size();
}

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t i = 0;
  while (true) {
    size_t j = s.find(sep, i);
    out.push_back(s.substr(i, j == std::string::npos ? std::string::npos : j - i));
    if (j == std::string::npos) return out;
    i = j + 1;
  }
}

}  // namespace

Result<ArraySpec> ParseArray(const std::string& text) {
  auto bad = [&](const std::string& why) {
    return InvalidArgument("field 'array': got \"" + text + "\", " + why +
                           "; want indices like 0-999, 0-999:2, 1,5,9 or 0-15%4");
  };
  ArraySpec spec;
  std::string body = text;
  if (auto pct = body.find('%'); pct != std::string::npos) {
    int64_t p = 0;
    if (!ParseNum(body.substr(pct + 1), &p) || p < 1)
      return bad("the limit after % is not a positive number");
    spec.max_running = static_cast<int32_t>(std::min<int64_t>(p, kMaxArraySize));
    body = body.substr(0, pct);
  }
  std::set<int32_t> seen;
  for (const std::string& part : Split(body, ',')) {
    int64_t lo = 0, hi = 0, step = 1;
    std::string range = part;
    if (auto colon = range.find(':'); colon != std::string::npos) {
      if (!ParseNum(range.substr(colon + 1), &step) || step < 1)
        return bad("the step is not a positive number");
      range = range.substr(0, colon);
    }
    if (auto dash = range.find('-'); dash != std::string::npos) {
      if (!ParseNum(range.substr(0, dash), &lo) || !ParseNum(range.substr(dash + 1), &hi)) {
        return bad("'" + part + "' is not a range");
      }
    } else {
      if (!ParseNum(range, &lo)) return bad("'" + part + "' is not an index");
      hi = lo;
    }
    if (lo < 0 || hi > kMaxArrayIndex || lo > hi) {
      return bad("indices go from 0 to " + std::to_string(kMaxArrayIndex) + ", low to high");
    }
    for (int64_t i = lo; i <= hi; i += step) {
      seen.insert(static_cast<int32_t>(i));
      if (seen.size() > kMaxArraySize) {
        return bad("more than " + std::to_string(kMaxArraySize) + " elements");
      }
    }
  }
  spec.indices.assign(seen.begin(), seen.end());
  return spec;
}

const char* DependencyTypeName(DependencyType t) {
  switch (t) {
    case DependencyType::kAfterOk:
      return "afterok";
    case DependencyType::kAfterAny:
      return "afterany";
    case DependencyType::kAfterNotOk:
      return "afternotok";
    case DependencyType::kSingleton:
      return "singleton";
  }
  return "afterok";
}

Result<std::vector<Dependency>> ParseDependencies(const std::string& text) {
  std::vector<Dependency> out;
  if (text.empty()) return out;
  for (const std::string& item : Split(text, ',')) {
    auto bad = [&](const std::string& why) {
      return InvalidArgument("field 'dependency': got \"" + text + "\", " + why +
                             "; want afterok:ID[:ID...], afterany:ID, afternotok:ID or singleton, "
                             "joined by ','");
    };
    std::vector<std::string> parts = Split(item, ':');
    Dependency d;
    const std::string& type = parts[0];
    if (type == "singleton") {
      if (parts.size() != 1) return bad("singleton takes no job ids");
      d.type = DependencyType::kSingleton;
      out.push_back(d);
      continue;
    }
    if (type == "afterok") {
      d.type = DependencyType::kAfterOk;
    } else if (type == "afterany") {
      d.type = DependencyType::kAfterAny;
    } else if (type == "afternotok") {
      d.type = DependencyType::kAfterNotOk;
    } else {
      return bad("unknown type '" + type + "'");
    }
    if (parts.size() < 2) return bad(type + " needs at least one job id");
    for (size_t i = 1; i < parts.size(); ++i) {
      int64_t id = 0;
      // "12_5" (one element of array 12) is taken as the whole array's first id 12 by the CLI
      // before it gets here; the head only sees numbers.
      if (!ParseNum(parts[i], &id) || id < 1) return bad("'" + parts[i] + "' is not a job id");
      d.jobs.push_back(static_cast<uint64_t>(id));
    }
    out.push_back(d);
  }
  return out;
}

std::string FormatDependencies(const std::vector<Dependency>& deps) {
  std::string out;
  for (const Dependency& d : deps) {
    if (!out.empty()) out += ",";
    out += DependencyTypeName(d.type);
    for (uint64_t id : d.jobs) out += ":" + std::to_string(id);
  }
  return out;
}

}  // namespace corral
