// GPU health (DESIGN §9): what an agent's checks of a GPU found, the policy that says which
// Xid events are the application's fault and which take the GPU out of service, and per-GPU
// drains with who made them. Pure: the agent assesses its counters here, the head applies the
// verdicts.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/time.h"

namespace corral {

// One check's verdict on a GPU (Slurm's health-program contract: 0 ok, 1 warn, 2 critical).
// Critical drains the GPU; warn is shown and counted, nothing more.
enum class GpuHealth { kOk, kWarn, kCritical };
const char* GpuHealthName(GpuHealth h);
bool ParseGpuHealth(const std::string& text, GpuHealth* out);

// The Xid policy table (NVIDIA's Xid catalogue, and the GPU device plugin's list of
// application errors): 13, 31, 43, 45, 68, 109 are the application's fault (its run fails,
// the GPU stays in service); 48 (double-bit ECC), 79 (fallen off the bus), 94 and 95
// (contained and uncontained ECC errors) drain the GPU; the others are counted and shown.
enum class XidClass { kApplication, kCritical, kOther };
XidClass ClassifyXid(int32_t xid);
// A few words on what the Xid means ("fallen off the bus"), "" for ones not in the table.
std::string XidMeaning(int32_t xid);
// "Xid 79 (fallen off the bus)"
std::string XidText(int32_t xid);

// What NVML counts for a GPU, read at each check. -1: not available on this GPU/driver.
struct GpuErrorCounters {
  int64_t ecc_sbe_volatile = -1;   // single-bit (corrected) since the driver loaded
  int64_t ecc_dbe_volatile = -1;   // double-bit (uncorrected) since the driver loaded
  int64_t ecc_sbe_aggregate = -1;  // over the GPU's life
  int64_t ecc_dbe_aggregate = -1;
  int64_t retired_pages = -1;       // pages retired (or rows remapped) over the GPU's life
  bool retirement_pending = false;  // a retirement/remap waits for the next GPU reset
  bool operator==(const GpuErrorCounters&) const = default;
};

struct GpuAssessment {
  GpuHealth health = GpuHealth::kOk;
  std::string reason;  // "" when ok
};

// One check of a GPU: its counters before and now, and the Xid events since. Critical: a
// critical Xid, or double-bit ECC errors that grew; warn: an Xid of neither class, retired
// pages that grew or a retirement pending; an application Xid alone leaves the GPU ok.
GpuAssessment AssessGpu(const GpuErrorCounters& before, const GpuErrorCounters& now,
                        const std::vector<int32_t>& xids);

// Who took a GPU out of service: an operator (kept until an operator returns it), or the
// health checks (lifted after enough clean checks in a row). kNone: in service.
enum class DrainSource { kNone, kAdmin, kHealth };
const char* DrainSourceName(DrainSource s);
bool ParseDrainSource(const std::string& text, DrainSource* out);

struct GpuDrain {
  DrainSource source = DrainSource::kNone;
  std::string reason;
  TimeMs since = 0;
  bool operator==(const GpuDrain&) const = default;
};

}  // namespace corral
