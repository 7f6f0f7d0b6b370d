// Archive sources read by libarchive from real files: a tar (plain or gzip) made by the system's
// tar from a directory has that directory's manifest, unpacks to the same files, and a member
// that would reach outside the dataset (an absolute name, "..", a symbolic or hard link, a
// device, a name used twice) is refused naming it, with nothing written outside the target.
#include "core/dataset_source.h"

#include <archive.h>
#include <archive_entry.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/dataset.h"
#include "core/dataset_kind.h"

namespace corral {
namespace {

namespace fs = std::filesystem;

// A member to write: its name, its kind (AE_IFREG, ...) and its content or link target.
struct TestMember {
  std::string name;
  unsigned int type = AE_IFREG;
  std::string data;
  std::string hardlink;
};

void WriteTar(const std::string& path, const std::vector<TestMember>& members) {
  archive* a = archive_write_new();
  archive_write_set_format_pax_restricted(a);
  ASSERT_EQ(archive_write_open_filename(a, path.c_str()), ARCHIVE_OK);
  for (const TestMember& m : members) {
    archive_entry* e = archive_entry_new();
    archive_entry_set_pathname(e, m.name.c_str());
    archive_entry_set_filetype(e, m.type);
    archive_entry_set_perm(e, 0644);
    if (m.type == AE_IFLNK) archive_entry_set_symlink(e, m.data.c_str());
    if (!m.hardlink.empty()) archive_entry_set_hardlink(e, m.hardlink.c_str());
    archive_entry_set_size(
        e, m.type == AE_IFREG && m.hardlink.empty() ? static_cast<la_int64_t>(m.data.size()) : 0);
    ASSERT_EQ(archive_write_header(a, e), ARCHIVE_OK) << archive_error_string(a);
    if (m.type == AE_IFREG && m.hardlink.empty()) {
      archive_write_data(a, m.data.data(), m.data.size());
    }
    archive_entry_free(e);
  }
  archive_write_close(a);
  archive_write_free(a);
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class ArchiveSourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/corral-archive-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    src_ = dir_ + "/src";
    fs::create_directories(src_ + "/train/cats");
    fs::create_directories(src_ + "/val");
    std::ofstream(src_ + "/train/cats/1.jpg") << std::string(300000, 'c');
    std::ofstream(src_ + "/train/b.jpg") << "bbbb";
    std::ofstream(src_ + "/val/a.jpg") << "aa";
    std::ofstream(src_ + "/labels.txt") << "";
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Into(const std::string& name) {
    fs::create_directories(dir_ + "/out/" + name);
    return dir_ + "/out/" + name;
  }
  std::string dir_, src_;
};

TEST_F(ArchiveSourceTest, ATarOfADirectoryHasItsManifestAndUnpacksToItsFiles) {
  auto want = ScanDataset(src_);
  ASSERT_TRUE(want.ok()) << want.status().ToString();
  for (const std::string& name :
       {std::string("d.tar"), std::string("d.tar.gz"), std::string("d.tgz")}) {
    const std::string tar = dir_ + "/" + name;
    const std::string flags = name == "d.tar" ? "cf" : "czf";
    ASSERT_EQ(std::system(("tar -C " + src_ + " -" + flags + " " + tar + " .").c_str()), 0);
    EXPECT_EQ(SourceKindOf(tar), DatasetSourceKind::kArchive);
    auto scanned = ScanSource(tar, dir_);
    ASSERT_TRUE(scanned.ok()) << scanned.status().ToString();
    EXPECT_EQ(scanned->digest, want->digest) << name;
    EXPECT_EQ(scanned->bytes, want->bytes);
    ASSERT_EQ(scanned->files.size(), 4u);
    EXPECT_EQ(scanned->files[0].path, "labels.txt");
    EXPECT_EQ(scanned->files[1].path, "train/b.jpg");

    const std::string into = Into(name);
    int64_t last = -1;
    auto unpacked = ReadArchive(tar, into, [&](int64_t n) { last = n; });
    ASSERT_TRUE(unpacked.ok()) << unpacked.status().ToString();
    EXPECT_EQ(unpacked->digest, want->digest);
    EXPECT_EQ(last, want->bytes);
    EXPECT_EQ(ReadText(into + "/train/cats/1.jpg"), std::string(300000, 'c'));
    EXPECT_EQ(ReadText(into + "/val/a.jpg"), "aa");
    auto again = ScanDataset(into);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again->digest, want->digest);
  }
  // Another content, another digest.
  std::ofstream(src_ + "/val/a.jpg") << "ab";
  ASSERT_EQ(std::system(("tar -C " + src_ + " -cf " + dir_ + "/e.tar .").c_str()), 0);
  auto changed = ReadArchive(dir_ + "/e.tar", "");
  ASSERT_TRUE(changed.ok());
  EXPECT_NE(changed->digest, want->digest);
}

TEST_F(ArchiveSourceTest, MembersThatReachOutsideAreRefusedNamingThem) {
  const std::vector<std::pair<std::string, std::vector<TestMember>>> cases = {
      {"../escape", {{"ok.txt", AE_IFREG, "x"}, {"../escape", AE_IFREG, "evil"}}},
      {"a/../../escape", {{"a/../../escape", AE_IFREG, "evil"}}},
      {"/tmp/corral-absolute-escape", {{"/tmp/corral-absolute-escape", AE_IFREG, "evil"}}},
      {"link", {{"link", AE_IFLNK, "/etc"}, {"link/passwd", AE_IFREG, "evil"}}},
      {"hard", {{"ok.txt", AE_IFREG, "x"}, {"hard", AE_IFREG, "", "/etc/passwd"}}},
      {"dev", {{"dev", AE_IFCHR, ""}}},
      {"twice", {{"twice", AE_IFREG, "1"}, {"twice", AE_IFREG, "2"}}},
      {"f/g", {{"f", AE_IFREG, "1"}, {"f/g", AE_IFREG, "2"}}},
  };
  int n = 0;
  for (const auto& [bad, members] : cases) {
    const std::string tar = dir_ + "/bad" + std::to_string(n) + ".tar";
    const std::string into = Into("bad" + std::to_string(n++));
    WriteTar(tar, members);
    auto scanned = ScanSource(tar, dir_);
    ASSERT_FALSE(scanned.ok()) << bad;
    EXPECT_NE(scanned.status().message().find("field 'source'"), std::string::npos);
    EXPECT_NE(scanned.status().message().find("'" + bad + "'"), std::string::npos)
        << scanned.status().message();
    auto unpacked = ReadArchive(tar, into);
    ASSERT_FALSE(unpacked.ok()) << bad;
    EXPECT_NE(unpacked.status().message().find("'" + bad + "'"), std::string::npos)
        << unpacked.status().message();
  }
  // Nothing was written outside the targets.
  EXPECT_FALSE(fs::exists(dir_ + "/out/escape"));
  EXPECT_FALSE(fs::exists(dir_ + "/escape"));
  EXPECT_FALSE(fs::exists("/tmp/corral-absolute-escape"));
  EXPECT_FALSE(fs::exists(dir_ + "/out/bad3/link"));
  EXPECT_EQ(ReadText("/etc/passwd").find("evil"), std::string::npos);
}

TEST_F(ArchiveSourceTest, ABrokenArchiveOrAMissingOneIsAnError) {
  std::ofstream(dir_ + "/junk.tar") << std::string(5000, 'j');
  auto junk = ReadArchive(dir_ + "/junk.tar", "");
  ASSERT_FALSE(junk.ok());
  EXPECT_NE(junk.status().message().find("junk.tar"), std::string::npos);
  auto missing = ScanSource(dir_ + "/missing.tar", dir_);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("missing.tar"), std::string::npos);
  // A truncated gzip archive: its members cannot all be read.
  ASSERT_EQ(std::system(("tar -C " + src_ + " -czf " + dir_ + "/t.tgz .").c_str()), 0);
  fs::resize_file(dir_ + "/t.tgz", fs::file_size(dir_ + "/t.tgz") / 2);
  EXPECT_FALSE(ReadArchive(dir_ + "/t.tgz", "").ok());
}

TEST(DatasetSourceKind, IsToldByTheSourcesText) {
  EXPECT_EQ(SourceKindOf("/shared/imagenet"), DatasetSourceKind::kDirectory);
  EXPECT_EQ(SourceKindOf("/shared/imagenet.tar"), DatasetSourceKind::kArchive);
  EXPECT_EQ(SourceKindOf("/shared/imagenet.tar.gz"), DatasetSourceKind::kArchive);
  EXPECT_EQ(SourceKindOf("/shared/imagenet.tgz"), DatasetSourceKind::kArchive);
  EXPECT_EQ(SourceKindOf("http://store/imagenet.tar"), DatasetSourceKind::kUrl);
  EXPECT_EQ(SourceKindOf("https://store/x/imagenet.tgz"), DatasetSourceKind::kUrl);
  const std::string digest = "sha256:" + std::string(64, 'a');
  auto url = ParseDataset({{"name", "in"},
                           {"source", "https://store/x/imagenet.tgz"},
                           {"digest", digest},
                           {"files", 1},
                           {"bytes", 1}});
  ASSERT_TRUE(url.ok()) << url.status().ToString();
  for (const std::string bad :
       {"http://store/imagenet", "https:///x.tar", "ftp://h/x.tar", "shared/x.tar"}) {
    auto r = ParseDataset(
        {{"name", "in"}, {"source", bad}, {"digest", digest}, {"files", 1}, {"bytes", 1}});
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("field 'source'"), std::string::npos);
  }
}

}  // namespace
}  // namespace corral
