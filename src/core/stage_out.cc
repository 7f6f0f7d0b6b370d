#include "core/stage_out.h"

#include <filesystem>

#include "core/field_error.h"

namespace corral {
namespace {

bool StageOutPathIsClean(const std::string& p) {
  if (p.empty() || p[0] != '/') return false;
  for (const auto& part : std::filesystem::path(p)) {
    if (part == "." || part == "..") return false;
  }
  return true;
}

// Whether `inner` is `outer` or under it.
bool StageOutWithin(const std::string& inner, const std::string& outer) {
  auto dir_text = [](const std::string& p) {
    std::string t = std::filesystem::path(p).lexically_normal().string();
    return t.empty() || t.back() != '/' ? t + "/" : t;
  };
  return dir_text(inner).rfind(dir_text(outer), 0) == 0;
}

Status CheckStageOut(const std::string& field, const StageOut& s, const nlohmann::json& got) {
  if (!StageOutPathIsClean(s.dir)) {
    return FieldError(field, got,
                      "DIR:DEST with DIR an absolute path on the node (no '.' or '..'), such as "
                      "/scratch/out:/shared/results");
  }
  if (!StageOutPathIsClean(s.dest)) {
    return FieldError(field, got,
                      "DIR:DEST with DEST an absolute path on shared storage (no '.' or '..'), "
                      "such as /scratch/out:/shared/results");
  }
  if (StageOutWithin(s.dest, s.dir) || StageOutWithin(s.dir, s.dest)) {
    return FieldError(field, got, "a DEST that is neither DIR, inside it, nor holds it");
  }
  return Status::Ok();
}

}  // namespace

Result<StageOut> ParseStageOut(const std::string& field, const std::string& text) {
  const size_t colon = text.find(':');
  if (colon == std::string::npos) {
    return FieldError(field, text, "DIR:DEST, such as /scratch/out:/shared/results");
  }
  StageOut s{text.substr(0, colon), text.substr(colon + 1)};
  CORRAL_RETURN_IF_ERROR(CheckStageOut(field, s, text));
  return s;
}

Result<StageOut> ParseStageOutJson(const std::string& field, const nlohmann::json& v) {
  if (v.is_string()) return ParseStageOut(field, v.get<std::string>());
  if (!v.is_object() || !v.contains("dir") || !v.contains("dest") || !v["dir"].is_string() ||
      !v["dest"].is_string() || v.size() != 2) {
    return FieldError(field, v, "\"DIR:DEST\" or {dir: DIR, dest: DEST}");
  }
  StageOut s{v["dir"].get<std::string>(), v["dest"].get<std::string>()};
  CORRAL_RETURN_IF_ERROR(CheckStageOut(field, s, v));
  return s;
}

nlohmann::json ToJson(const StageOut& s) { return {{"dir", s.dir}, {"dest", s.dest}}; }

StageOut StageOutFromJson(const nlohmann::json& j) {
  return {j.value("dir", ""), j.value("dest", "")};
}

nlohmann::json ToJson(const StageOutResult& r) {
  nlohmann::json j{
      {"bytes", r.bytes}, {"files", r.files}, {"ms", r.ms}, {"from", r.from}, {"to", r.to}};
  if (!r.error.empty()) j["error"] = r.error;
  return j;
}

StageOutResult StageOutResultFromJson(const nlohmann::json& j) {
  StageOutResult r;
  r.done = true;
  r.bytes = j.value("bytes", int64_t{0});
  r.files = j.value("files", int64_t{0});
  r.ms = j.value("ms", int64_t{0});
  r.from = j.value("from", "");
  r.to = j.value("to", "");
  r.error = j.value("error", "");
  return r;
}

std::string DescribeStageOut(const StageOutResult& r, const std::string& node) {
  if (!r.error.empty()) {
    return "stage-out of " + r.from + " to " + r.to + " on " + node + " failed: " + r.error +
           " (what the job wrote stays in " + r.from + " on " + node + ")";
  }
  return "staged out " + r.from + " to " + r.to + " on " + node + ": " + std::to_string(r.bytes) +
         " bytes, " + std::to_string(r.files) + " files in " + std::to_string(r.ms) + " ms";
}

}  // namespace corral
