#include "core/fetch_libraries.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

namespace corral {
namespace {

bool Loaded(const char* soname) {
  void* handle = dlopen(soname, RTLD_NOW | RTLD_NOLOAD);
  if (handle == nullptr) return false;
  dlclose(handle);  // RTLD_NOLOAD took a reference
  return true;
}

// This test's binary links the libraries' user only, as corral does: nothing maps them until a
// dataset is read, and then each is opened once.
TEST(FetchLibraries, NeitherIsMappedUntilFirstUsedThenEachIsOpenedOnce) {
  ASSERT_FALSE(Loaded(CORRAL_LIBARCHIVE_SONAME));
  ASSERT_FALSE(Loaded(CORRAL_LIBCURL_SONAME));

  auto archive = Libarchive();
  ASSERT_TRUE(archive.ok()) << archive.status().message();
  EXPECT_TRUE(Loaded(CORRAL_LIBARCHIVE_SONAME));
  EXPECT_FALSE(Loaded(CORRAL_LIBCURL_SONAME));
  auto again = Libarchive();
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*archive, *again);
  EXPECT_NE((*archive)->read_new, nullptr);

  auto curl = Libcurl();
  ASSERT_TRUE(curl.ok()) << curl.status().message();
  EXPECT_TRUE(Loaded(CORRAL_LIBCURL_SONAME));
  CURL* c = (*curl)->easy_init();  // works only after curl_global_init
  ASSERT_NE(c, nullptr);
  (*curl)->easy_cleanup(c);
}

TEST(FetchLibraries, AMissingLibraryIsAnErrorNamingItAndWhatNeedsIt) {
  auto opened = OpenLibarchive("libcorral-no-such-library.so.1");
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(opened.status().code(), ErrorCode::kFailedPrecondition);
  EXPECT_NE(opened.status().message().find("libcorral-no-such-library.so.1"), std::string::npos)
      << opened.status().message();
  EXPECT_NE(opened.status().message().find("reading a dataset's archive"), std::string::npos);
}

TEST(FetchLibraries, ALibraryWithoutTheFunctionsIsRefusedNamingTheFirstMissing) {
  auto opened = OpenLibcurl("libm.so.6");
  ASSERT_FALSE(opened.ok());
  EXPECT_NE(opened.status().message().find("no function curl_global_init"), std::string::npos)
      << opened.status().message();
  auto archive = OpenLibarchive("libm.so.6");
  ASSERT_FALSE(archive.ok());
  EXPECT_NE(archive.status().message().find("no function archive_read_new"), std::string::npos);
}

}  // namespace
}  // namespace corral
