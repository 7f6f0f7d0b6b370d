// The GPU health policy: the Xid table and a check's verdict from its counters.
#include "core/gpu_health.h"

#include <gtest/gtest.h>

namespace corral {
namespace {

TEST(XidPolicy, EachRowOfTheTable) {
  for (int32_t xid : {13, 31, 43, 45, 68, 109}) {
    EXPECT_EQ(ClassifyXid(xid), XidClass::kApplication) << xid;
  }
  for (int32_t xid : {48, 79, 94, 95}) EXPECT_EQ(ClassifyXid(xid), XidClass::kCritical) << xid;
  for (int32_t xid : {1, 63, 64, 74, 92}) EXPECT_EQ(ClassifyXid(xid), XidClass::kOther) << xid;
  EXPECT_EQ(XidText(79), "Xid 79 (fallen off the bus)");
  EXPECT_EQ(XidText(63), "Xid 63");
}

TEST(AssessGpu, VerdictsFromXidsAndCounters) {
  GpuErrorCounters zero{0, 0, 0, 0, 0, false};
  EXPECT_EQ(AssessGpu(zero, zero, {}).health, GpuHealth::kOk);
  EXPECT_EQ(AssessGpu(zero, zero, {13}).health, GpuHealth::kOk) << "the application's fault";
  GpuAssessment bus = AssessGpu(zero, zero, {13, 79});
  EXPECT_EQ(bus.health, GpuHealth::kCritical);
  EXPECT_EQ(bus.reason, "Xid 79 (fallen off the bus)");
  GpuErrorCounters dbe = zero;
  dbe.ecc_dbe_volatile = 2;
  EXPECT_EQ(AssessGpu(zero, dbe, {}).health, GpuHealth::kCritical);
  EXPECT_EQ(AssessGpu(dbe, dbe, {}).health, GpuHealth::kOk) << "no new double-bit errors";
  GpuErrorCounters unknown;  // -1: the GPU has no ECC
  EXPECT_EQ(AssessGpu(unknown, dbe, {}).health, GpuHealth::kOk) << "a first reading is a baseline";
  GpuErrorCounters sbe = zero;
  sbe.ecc_sbe_volatile = 100;
  EXPECT_EQ(AssessGpu(zero, sbe, {}).health, GpuHealth::kOk) << "corrected errors are counted only";
  GpuErrorCounters retired = zero;
  retired.retired_pages = 1;
  GpuAssessment warn = AssessGpu(zero, retired, {63});
  EXPECT_EQ(warn.health, GpuHealth::kWarn);
  EXPECT_EQ(warn.reason, "Xid 63; retired pages 0 -> 1");
  GpuHealth parsed = GpuHealth::kOk;
  EXPECT_TRUE(ParseGpuHealth("critical", &parsed));
  EXPECT_EQ(parsed, GpuHealth::kCritical);
  EXPECT_FALSE(ParseGpuHealth("bad", &parsed));
  DrainSource src = DrainSource::kNone;
  EXPECT_TRUE(ParseDrainSource("health", &src));
  EXPECT_EQ(src, DrainSource::kHealth);
}

}  // namespace
}  // namespace corral
