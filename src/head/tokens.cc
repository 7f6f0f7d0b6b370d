#include "head/tokens.h"

#include <fcntl.h>
#include <unistd.h>

#include <fstream>
#include <random>

namespace corral::head {

std::string RandomToken() {
  unsigned char buf[24];
  int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  CORRAL_CHECK(fd >= 0, "cannot open /dev/urandom");
  ssize_t n = read(fd, buf, sizeof buf);
  close(fd);
  CORRAL_CHECK(n == static_cast<ssize_t>(sizeof buf), "short read from /dev/urandom");
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : buf) {
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 15]);
  }
  return out;
}

Result<std::string> LoadOrCreateToken(const std::string& path) {
  {
    std::ifstream in(path);
    std::string token;
    if (in && std::getline(in, token) && !token.empty()) return token;
  }
  std::string token = RandomToken();
  std::string tmp = path + ".tmp";
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Unavailable("cannot write " + tmp);
  std::string line = token + "\n";
  bool ok =
      write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size()) && fsync(fd) == 0;
  close(fd);
  if (!ok || rename(tmp.c_str(), path.c_str()) != 0) return Unavailable("cannot write " + path);
  return token;
}

bool TokensEqual(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace corral::head
