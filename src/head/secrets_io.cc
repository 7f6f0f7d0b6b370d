// The head's secrets from and to the world: /dev/urandom and the token files.
#include <fcntl.h>
#include <unistd.h>

#include <fstream>

#include "head/tokens.h"

namespace corral::head {

std::string UrandomSource::Secret() {
  unsigned char buf[32];
  int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  CORRAL_CHECK(fd >= 0, "cannot open /dev/urandom");
  ssize_t n = read(fd, buf, sizeof buf);
  close(fd);
  CORRAL_CHECK(n == static_cast<ssize_t>(sizeof buf), "short read from /dev/urandom");
  return HexBytes(buf, sizeof buf);
}

Result<std::string> LoadOrCreateToken(const std::string& path, const std::string& fresh) {
  {
    std::ifstream in(path);
    std::string token;
    if (in && std::getline(in, token) && !token.empty()) return token;
  }
  std::string tmp = path + ".tmp";
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Unavailable("cannot write " + tmp);
  std::string line = fresh + "\n";
  bool ok =
      write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size()) && fsync(fd) == 0;
  close(fd);
  if (!ok || rename(tmp.c_str(), path.c_str()) != 0) return Unavailable("cannot write " + path);
  return fresh;
}

}  // namespace corral::head
