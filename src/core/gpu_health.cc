#include "core/gpu_health.h"

#include "core/enum_names.h"

namespace corral {

const char* GpuHealthName(GpuHealth h) {
  switch (h) {
    case GpuHealth::kOk:
      return "ok";
    case GpuHealth::kWarn:
      return "warn";
    case GpuHealth::kCritical:
      return "critical";
  }
  return "unknown";
}

bool ParseGpuHealth(const std::string& text, GpuHealth* out) {
  static constexpr GpuHealth kAll[] = {GpuHealth::kOk, GpuHealth::kWarn, GpuHealth::kCritical};
  return ParseByName(text, kAll, GpuHealthName, out);
}

XidClass ClassifyXid(int32_t xid) {
  switch (xid) {
    case 13:
    case 31:
    case 43:
    case 45:
    case 68:
    case 109:
      return XidClass::kApplication;
    case 48:
    case 79:
    case 94:
    case 95:
      return XidClass::kCritical;
    default:
      return XidClass::kOther;
  }
}

std::string XidMeaning(int32_t xid) {
  switch (xid) {
    case 13:
      return "graphics engine exception";
    case 31:
      return "GPU memory page fault";
    case 43:
      return "GPU stopped processing";
    case 45:
      return "preemptive cleanup";
    case 68:
      return "video processor exception";
    case 109:
      return "context switch timeout";
    case 48:
      return "double-bit ECC error";
    case 79:
      return "fallen off the bus";
    case 94:
      return "contained ECC error";
    case 95:
      return "uncontained ECC error";
    default:
      return "";
  }
}

std::string XidText(int32_t xid) {
  std::string meaning = XidMeaning(xid);
  return "Xid " + std::to_string(xid) + (meaning.empty() ? "" : " (" + meaning + ")");
}

GpuAssessment AssessGpu(const GpuErrorCounters& before, const GpuErrorCounters& now,
                        const std::vector<int32_t>& xids) {
  // A counter grew only where both readings exist: the first reading is the baseline.
  auto grew = [](int64_t was, int64_t is) { return was >= 0 && is > was; };
  GpuAssessment a;
  auto note = [&](GpuHealth h, const std::string& why) {
    if (h > a.health) a.health = h;
    a.reason += (a.reason.empty() ? "" : "; ") + why;
  };
  for (int32_t xid : xids) {
    if (ClassifyXid(xid) == XidClass::kCritical) note(GpuHealth::kCritical, XidText(xid));
  }
  if (grew(before.ecc_dbe_volatile, now.ecc_dbe_volatile)) {
    note(GpuHealth::kCritical, "double-bit ECC errors " + std::to_string(before.ecc_dbe_volatile) +
                                   " -> " + std::to_string(now.ecc_dbe_volatile));
  }
  for (int32_t xid : xids) {
    if (ClassifyXid(xid) == XidClass::kOther) note(GpuHealth::kWarn, XidText(xid));
  }
  if (grew(before.retired_pages, now.retired_pages)) {
    note(GpuHealth::kWarn, "retired pages " + std::to_string(before.retired_pages) + " -> " +
                               std::to_string(now.retired_pages));
  }
  if (now.retirement_pending && !before.retirement_pending) {
    note(GpuHealth::kWarn, "a page retirement waits for a GPU reset");
  }
  return a;
}

const char* DrainSourceName(DrainSource s) {
  switch (s) {
    case DrainSource::kNone:
      return "none";
    case DrainSource::kAdmin:
      return "admin";
    case DrainSource::kHealth:
      return "health";
  }
  return "unknown";
}

bool ParseDrainSource(const std::string& text, DrainSource* out) {
  static constexpr DrainSource kAll[] = {DrainSource::kNone, DrainSource::kAdmin,
                                         DrainSource::kHealth};
  return ParseByName(text, kAll, DrainSourceName, out);
}

}  // namespace corral
