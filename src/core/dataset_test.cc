// A dataset's manifest read from real files: sorted relative paths, sizes, SHA-256 digests,
// one digest for the list that changes with any file's content, and sources refused naming
// the field ('source'): missing, not a directory, holding a link.
#include "core/dataset.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/dataset_files.h"
#include "core/dataset_key.h"

namespace corral {
namespace {

namespace fs = std::filesystem;

class ManifestTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/corral-manifest-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    fs::create_directories(dir_ + "/train");
    std::ofstream(dir_ + "/train/b.jpg") << "bbbb";
    std::ofstream(dir_ + "/train/a.jpg") << "aa";
    std::ofstream(dir_ + "/labels.txt") << "";
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string dir_;
};

TEST_F(ManifestTest, ListsEveryFileWithItsSizeAndDigest) {
  auto m = ScanDataset(dir_);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  ASSERT_EQ(m->files.size(), 3u);
  EXPECT_EQ(m->files[0].path, "labels.txt");
  EXPECT_EQ(m->files[1].path, "train/a.jpg");
  EXPECT_EQ(m->files[2].path, "train/b.jpg");
  EXPECT_EQ(m->files[2].size, 4);
  EXPECT_EQ(m->files[0].sha256, Sha256Hex(""));
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(m->bytes, 6);
  EXPECT_EQ(m->digest.rfind("sha256:", 0), 0u);
  EXPECT_EQ(ScanDataset(dir_)->digest, m->digest) << "the same content, the same digest";
  std::ofstream(dir_ + "/train/a.jpg") << "ab";  // same size, other bytes
  EXPECT_NE(ScanDataset(dir_)->digest, m->digest);
}

TEST_F(ManifestTest, RefusesMissingSourcesAndLinksNamingTheField) {
  auto missing = ScanDataset(dir_ + "/nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("field 'source'"), std::string::npos);
  auto file = ScanDataset(dir_ + "/labels.txt");
  EXPECT_NE(file.status().message().find("is not a directory"), std::string::npos);
  fs::create_symlink("/etc/passwd", dir_ + "/train/escape");
  auto link = ScanDataset(dir_);
  ASSERT_FALSE(link.ok());
  EXPECT_NE(link.status().message().find("train/escape"), std::string::npos)
      << link.status().message();
}

TEST_F(ManifestTest, CopyAndHashGivesTheSourcesDigest) {
  auto f = CopyAndHash(dir_ + "/train/b.jpg", dir_ + "/copy");
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->size, 4);
  EXPECT_EQ(f->sha256, Sha256Hex("bbbb"));
  EXPECT_FALSE(CopyAndHash(dir_ + "/train/b.jpg", dir_ + "/copy").ok()) << "never overwrites";
}

// The head measures and budgets a source by this key: every dataset of one directory of shared
// storage is one source, and a URL's host and port (its default port written out) is one.
TEST(DatasetSourceKeyTest, APathsDirectoryOrAUrlsSchemeHostAndPort) {
  EXPECT_EQ(DatasetSourceKey("/shared/imagenet"), "/shared");
  EXPECT_EQ(DatasetSourceKey("/shared/cifar.tar.gz"), "/shared");
  EXPECT_EQ(DatasetSourceKey("/data"), "/");
  EXPECT_EQ(DatasetSourceKey("https://Store.example/a/coco.tar"), "https://store.example:443");
  EXPECT_EQ(DatasetSourceKey("http://store.example/coco.tar"), "http://store.example:80");
  EXPECT_EQ(DatasetSourceKey("http://ana:pw@store.example:8080/x.tgz"),
            "http://store.example:8080");
  EXPECT_EQ(DatasetSourceKey("https://[::1]/x.tar"), "https://[::1]:443");
  EXPECT_EQ(DatasetSourceKey("https://[::1]:9443/x.tar"), "https://[::1]:9443");
}

}  // namespace
}  // namespace corral
