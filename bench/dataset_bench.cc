// The node's dataset cache on this machine (docs/benchmarks.md, "Datasets"): the stage-in of a
// dataset of many small files (a fresh cache's Acquire: copy, SHA-256 of every file, the
// manifest's check, syncfs, rename) against `cp -r` of the same files (then `sync`), and the
// time a job takes to read every file from the source and from the cached copy; and the same
// files as a .tar.gz archive on the source: its stage-in (unpacked by libarchive, every member
// hashed and checked) against `tar -xzf` of it (then `sync`).
//
//   corral_dataset_bench [FILES] [BYTES_PER_FILE] [DIR]   (defaults 20000 4096 /var/tmp)
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "agent/data/dataset_cache.h"
#include "core/dataset_files.h"
#include "core/dataset_source.h"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

int Run(const std::vector<std::string>& argv) {
  pid_t pid = fork();
  if (pid == 0) {
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// Reads every file under `dir` whole, as a data loader's epoch does.
int64_t ReadAll(const std::string& dir) {
  int64_t bytes = 0;
  std::vector<char> buf(1 << 16);
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    std::ifstream in(e.path(), std::ios::binary);
    while (in.read(buf.data(), static_cast<std::streamsize>(buf.size())) || in.gcount() > 0) {
      bytes += in.gcount();
    }
  }
  return bytes;
}

}  // namespace

int main(int argc, char** argv) {
  const int files = argc > 1 ? std::stoi(argv[1]) : 20000;
  const int size = argc > 2 ? std::stoi(argv[2]) : 4096;
  const std::string base = (argc > 3 ? argv[3] : "/var/tmp") + std::string("/corral-ds-bench.") +
                           std::to_string(getpid());
  const std::string src = base + "/src";
  for (int i = 0; i < files; ++i) {
    const std::string dir = src + "/" + std::to_string(i % 100);
    if (i < 100) fs::create_directories(dir);
    std::ofstream(dir + "/" + std::to_string(i) + ".jpg") << std::string(size, 'a' + i % 26);
  }
  auto manifest = corral::ScanDataset(src);
  if (!manifest.ok()) {
    std::fprintf(stderr, "%s\n", manifest.status().message().c_str());
    return 1;
  }
  corral::DatasetRef ref;
  ref.name = "bench";
  ref.source = src;
  ref.digest = manifest->digest;
  ref.bytes = manifest->bytes;
  Run({"/bin/sync"});
  auto t = Clock::now();
  Run({"/bin/cp", "-r", src, base + "/cp"});
  Run({"/bin/sync"});
  const double cp = Seconds(t);
  corral::agent::DatasetCache cache({base + "/cache"}, corral::agent::RealNodeEnv().clock);
  t = Clock::now();
  auto staged = cache.Acquire(ref, nullptr);
  const double stage = Seconds(t);
  if (!staged.ok()) {
    std::fprintf(stderr, "%s\n", staged.status().message().c_str());
    return 1;
  }
  t = Clock::now();
  ReadAll(src);
  const double read_src = Seconds(t);
  t = Clock::now();
  ReadAll(staged->path);
  const double read_cache = Seconds(t);
  const double mib = static_cast<double>(manifest->bytes) / (1 << 20);
  std::printf("files %d x %d B = %.1f MiB\n", files, size, mib);
  std::printf("cp -r + sync      %.2f s  %.1f MiB/s  %.0f files/s\n", cp, mib / cp, files / cp);
  std::printf("stage-in (cache)  %.2f s  %.1f MiB/s  %.0f files/s  (%.2fx cp -r)\n", stage,
              mib / stage, files / stage, stage / cp);
  std::printf("read all: source %.2f s, cache %.2f s, ratio %.2f\n", read_src, read_cache,
              read_src / read_cache);
  close(staged->use_fd);

  const std::string tgz = base + "/src.tar.gz";
  Run({"/bin/tar", "-C", src, "-czf", tgz, "."});
  const double tgz_mib = static_cast<double>(fs::file_size(tgz)) / (1 << 20);
  fs::create_directories(base + "/untar");
  Run({"/bin/sync"});
  t = Clock::now();
  Run({"/bin/tar", "-C", base + "/untar", "-xzf", tgz});
  Run({"/bin/sync"});
  const double untar = Seconds(t);
  corral::DatasetRef packed = ref;
  packed.source = tgz;
  corral::agent::DatasetCache archive_cache({base + "/cache-tgz"},
                                            corral::agent::RealNodeEnv().clock);
  t = Clock::now();
  auto unpacked = archive_cache.Acquire(packed, nullptr);
  const double stage_tgz = Seconds(t);
  if (!unpacked.ok()) {
    std::fprintf(stderr, "%s\n", unpacked.status().message().c_str());
    return 1;
  }
  std::printf("archive .tar.gz %.1f MiB\n", tgz_mib);
  std::printf("tar -xzf + sync   %.2f s  %.1f MiB/s  %.0f files/s\n", untar, mib / untar,
              files / untar);
  std::printf(
      "stage-in (.tar.gz) %.2f s  %.1f MiB/s  %.0f files/s  (%.2fx tar -xzf, %.2fx cp -r)\n",
      stage_tgz, mib / stage_tgz, files / stage_tgz, stage_tgz / untar, stage_tgz / cp);
  close(unpacked->use_fd);
  fs::remove_all(base);
  return 0;
}
