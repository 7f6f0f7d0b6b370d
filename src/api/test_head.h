// A started head on an in-memory store for the API's tests, with the tokens they call it with.
#pragma once

#include <memory>

#include "head/head.h"
#include "testing/fakes.h"

namespace corral::api::test {

inline constexpr char kAdmin[] = "admin-secret";
inline constexpr char kJoin[] = "join-secret";

// Created and started on `clock` and `random`, which must outlive it; an error if Create fails.
inline Result<std::unique_ptr<head::Head>> StartTestHead(const Clock* clock, RandomSource* random) {
  auto h = head::Head::Create({},
                              std::make_unique<corral::testing::MemoryStore>(
                                  std::make_shared<corral::testing::MemoryDisk>()),
                              clock, random, {kAdmin, kJoin});
  if (!h.ok()) return h.status();
  (*h)->Start();
  return std::move(*h);
}

}  // namespace corral::api::test
