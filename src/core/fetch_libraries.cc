#include "core/fetch_libraries.h"

#include <dlfcn.h>

namespace corral {
namespace {

// A library opened with dlopen, and the first of the asked functions it lacked. The handle is
// never closed: the resolved functions point into it for the rest of the process.
class OpenedLibrary {
 public:
  OpenedLibrary(std::string purpose, std::string soname)
      : purpose_(std::move(purpose)), soname_(std::move(soname)) {
    handle_ = dlopen(soname_.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle_ == nullptr) {
      const char* why = dlerror();
      error_ = why != nullptr ? why : "dlopen failed";
    }
  }

  template <typename F>
  void Resolve(const char* name, F* out) {
    if (handle_ == nullptr || !error_.empty()) return;
    void* symbol = dlsym(handle_, name);
    if (symbol == nullptr) {
      error_ = "it has no function " + std::string(name);
      return;
    }
    *out = reinterpret_cast<F>(symbol);
  }

  Status status() const {
    if (error_.empty()) return Status::Ok();
    return FailedPrecondition(purpose_ + " needs " + soname_ + " (install its package): " + error_);
  }

 private:
  std::string purpose_;
  std::string soname_;
  void* handle_ = nullptr;
  std::string error_;
};

}  // namespace

Result<ArchiveCalls> OpenLibarchive(const std::string& soname) {
  OpenedLibrary lib("reading a dataset's archive", soname);
  ArchiveCalls c;
  lib.Resolve("archive_read_new", &c.read_new);
  lib.Resolve("archive_read_free", &c.read_free);
  lib.Resolve("archive_read_support_filter_gzip", &c.support_filter_gzip);
  lib.Resolve("archive_read_support_format_tar", &c.support_format_tar);
  lib.Resolve("archive_read_open_filename", &c.open_filename);
  lib.Resolve("archive_read_next_header", &c.next_header);
  lib.Resolve("archive_read_data", &c.read_data);
  lib.Resolve("archive_error_string", &c.error_string);
  lib.Resolve("archive_entry_pathname", &c.entry_pathname);
  lib.Resolve("archive_entry_filetype", &c.entry_filetype);
  lib.Resolve("archive_entry_hardlink", &c.entry_hardlink);
  CORRAL_RETURN_IF_ERROR(lib.status());
  return c;
}

Result<CurlCalls> OpenLibcurl(const std::string& soname) {
  OpenedLibrary lib("downloading a dataset's URL", soname);
  CurlCalls c;
  decltype(&::curl_global_init) global_init = nullptr;
  lib.Resolve("curl_global_init", &global_init);
  lib.Resolve("curl_easy_init", &c.easy_init);
  lib.Resolve("curl_easy_setopt", &c.easy_setopt);
  lib.Resolve("curl_easy_perform", &c.easy_perform);
  lib.Resolve("curl_easy_getinfo", &c.easy_getinfo);
  lib.Resolve("curl_easy_cleanup", &c.easy_cleanup);
  lib.Resolve("curl_easy_strerror", &c.easy_strerror);
  CORRAL_RETURN_IF_ERROR(lib.status());
  // Reference-counted by libcurl; not thread-safe, hence once per process from Libcurl().
  if (global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
    return FailedPrecondition("downloading a dataset's URL: " + soname + " did not initialise");
  }
  return c;
}

// Function-local statics: opened once, by whichever thread asks first, and never changed after.
Result<const ArchiveCalls*> Libarchive() {
  static const Result<ArchiveCalls> opened = OpenLibarchive(CORRAL_LIBARCHIVE_SONAME);
  if (!opened.ok()) return opened.status();
  return &*opened;
}

Result<const CurlCalls*> Libcurl() {
  static const Result<CurlCalls> opened = OpenLibcurl(CORRAL_LIBCURL_SONAME);
  if (!opened.ok()) return opened.status();
  return &*opened;
}

}  // namespace corral
