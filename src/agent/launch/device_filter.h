// cgroup v2 has no devices.deny file: a group's device access is decided by an eBPF program
// of type BPF_PROG_TYPE_CGROUP_DEVICE attached to it (as runc and systemd do). This builds that
// program from a deny list and attaches it, so the v2 path isolates GPUs as v1's
// devices controller does.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace corral::agent {

// Whether this kernel loads device programs for us (root, CONFIG_CGROUP_BPF).
bool DeviceFilterSupported();

// Attaches to the v2 group at `cgroup_dir` a program that refuses every access to the character
// devices `major`:m for m in `minors` and allows all else. Multi-attach: programs of the
// groups above still apply. The attachment lives as long as the group.
Status DenyCharDevices(const std::string& cgroup_dir, int32_t major,
                       const std::vector<int32_t>& minors);

}  // namespace corral::agent
