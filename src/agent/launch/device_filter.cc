#include "agent/launch/device_filter.h"

#include <utility>

#include <fcntl.h>
#include <linux/bpf.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "agent/node/owned_fd.h"

namespace corral::agent {
namespace {

int Bpf(int cmd, union bpf_attr* attr) {
  return static_cast<int>(syscall(__NR_bpf, cmd, attr, sizeof(*attr)));
}

bpf_insn Insn(uint8_t code, uint8_t dst, uint8_t src, int16_t off, int32_t imm) {
  bpf_insn i{};
  i.code = code;
  i.dst_reg = dst;
  i.src_reg = src;
  i.off = off;
  i.imm = imm;
  return i;
}

// A major no device has: the probe program is loaded, never attached.
constexpr int32_t kProbeMajor = 0;

// r1 points at struct bpf_cgroup_dev_ctx {u32 access_type (access << 16 | type); u32 major;
// u32 minor}. Returns 0 (refuse) for a listed character device, else 1.
std::vector<bpf_insn> DenyProgram(int32_t major, const std::vector<int32_t>& minors) {
  const auto n = static_cast<int16_t>(minors.size());
  std::vector<bpf_insn> p;
  if (n == 0) {  // the verifier refuses unreachable instructions: "deny" would be one
    p.push_back(Insn(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 1));
    p.push_back(Insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0));
    return p;
  }
  p.push_back(Insn(BPF_LDX | BPF_W | BPF_MEM, BPF_REG_2, BPF_REG_1, 0, 0));
  p.push_back(Insn(BPF_ALU64 | BPF_AND | BPF_K, BPF_REG_2, 0, 0, 0xffff));
  p.push_back(Insn(BPF_LDX | BPF_W | BPF_MEM, BPF_REG_3, BPF_REG_1, 4, 0));
  p.push_back(Insn(BPF_LDX | BPF_W | BPF_MEM, BPF_REG_4, BPF_REG_1, 8, 0));
  // Jump offsets count the instructions skipped: past the minor tests to "allow".
  p.push_back(Insn(BPF_JMP | BPF_JNE | BPF_K, BPF_REG_2, 0, static_cast<int16_t>(n + 1),
                   BPF_DEVCG_DEV_CHAR));
  p.push_back(Insn(BPF_JMP | BPF_JNE | BPF_K, BPF_REG_3, 0, n, major));
  for (int16_t i = 0; i < n; ++i) {
    // To "deny": past the remaining tests and the two instructions of "allow".
    p.push_back(Insn(BPF_JMP | BPF_JEQ | BPF_K, BPF_REG_4, 0, static_cast<int16_t>(n - 1 - i + 2),
                     minors[static_cast<size_t>(i)]));
  }
  p.push_back(Insn(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 1));  // allow
  p.push_back(Insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0));
  p.push_back(Insn(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 0));  // deny
  p.push_back(Insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0));
  return p;
}

// Loads without the verifier's log (a log that outgrows its buffer fails the load: ENOSPC);
// only a refused program is loaded again with it, to say why.
int LoadOnce(const std::vector<bpf_insn>& program, char* log, uint32_t log_size) {
  static const char kLicense[] = "Apache-2.0";
  union bpf_attr attr;
  std::memset(&attr, 0, sizeof(attr));
  attr.prog_type = BPF_PROG_TYPE_CGROUP_DEVICE;
  attr.insns = reinterpret_cast<uint64_t>(program.data());
  attr.insn_cnt = static_cast<uint32_t>(program.size());
  attr.license = reinterpret_cast<uint64_t>(kLicense);
  if (log != nullptr) {
    attr.log_buf = reinterpret_cast<uint64_t>(log);
    attr.log_size = log_size;
    attr.log_level = 1;
  }
  return Bpf(BPF_PROG_LOAD, &attr);
}

Result<OwnedFd> Load(const std::vector<bpf_insn>& program) {
  int fd = LoadOnce(program, nullptr, 0);
  if (fd >= 0) return OwnedFd(fd);
  const int err = errno;
  std::vector<char> log(1 << 16, '\0');
  OwnedFd again(LoadOnce(program, log.data(), static_cast<uint32_t>(log.size() - 1)));
  return Unavailable(std::string("loading the cgroup device program: ") + std::strerror(err) +
                     (log[0] != 0 ? std::string(" (") + log.data() + ")" : ""));
}

}  // namespace

bool DeviceFilterSupported() { return Load(DenyProgram(kProbeMajor, {0})).ok(); }

Status DenyCharDevices(const std::string& cgroup_dir, int32_t major,
                       const std::vector<int32_t>& minors) {
  auto program = Load(DenyProgram(major, minors));
  if (!program.ok()) return program.status();
  OwnedFd group(open(cgroup_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!group.valid()) {
    return Unavailable("opening cgroup " + cgroup_dir + ": " + std::strerror(errno));
  }
  union bpf_attr attr;
  std::memset(&attr, 0, sizeof(attr));
  attr.target_fd = static_cast<uint32_t>(group.get());
  attr.attach_bpf_fd = static_cast<uint32_t>(program->get());
  attr.attach_type = BPF_CGROUP_DEVICE;
  attr.attach_flags = BPF_F_ALLOW_MULTI;
  if (Bpf(BPF_PROG_ATTACH, &attr) != 0) {
    return Unavailable("attaching the device program to " + cgroup_dir + ": " +
                       std::strerror(errno));
  }
  return Status::Ok();
}

}  // namespace corral::agent
