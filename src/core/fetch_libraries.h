// libarchive and libcurl, opened with dlopen when a dataset is first read from an archive or a
// URL, not linked. Linked, they bring some twenty more shared libraries (ICU, libxml2, nghttp2,
// Kerberos, the compressors) that the loader maps at every start of every corral process, each
// CLI call included: 13 ms of a 70 ms `corral --version` (docs/benchmarks.md, "Whole system").
// Only the CLI's `datasets add` and an agent's stage-in read sources.
//
// The tables below hold the functions dataset_source.cc calls, typed from the libraries' own
// headers, so a call through them is checked as a direct call is. Each library is opened once
// per process, on first use (any thread), and stays open.
#pragma once

#include <archive.h>
#include <archive_entry.h>
#include <curl/curl.h>

#include <string>

#include "core/status.h"

namespace corral {

struct ArchiveCalls {
  decltype(&::archive_read_new) read_new = nullptr;
  decltype(&::archive_read_free) read_free = nullptr;
  decltype(&::archive_read_support_filter_gzip) support_filter_gzip = nullptr;
  decltype(&::archive_read_support_format_tar) support_format_tar = nullptr;
  decltype(&::archive_read_open_filename) open_filename = nullptr;
  decltype(&::archive_read_next_header) next_header = nullptr;
  decltype(&::archive_read_data) read_data = nullptr;
  decltype(&::archive_error_string) error_string = nullptr;
  decltype(&::archive_entry_pathname) entry_pathname = nullptr;
  decltype(&::archive_entry_filetype) entry_filetype = nullptr;
  decltype(&::archive_entry_hardlink) entry_hardlink = nullptr;
};

struct CurlCalls {
  decltype(&::curl_easy_init) easy_init = nullptr;
  decltype(&::curl_easy_setopt) easy_setopt = nullptr;
  decltype(&::curl_easy_perform) easy_perform = nullptr;
  decltype(&::curl_easy_getinfo) easy_getinfo = nullptr;
  decltype(&::curl_easy_cleanup) easy_cleanup = nullptr;
  decltype(&::curl_easy_strerror) easy_strerror = nullptr;
};

// The process's libarchive (its soname found at build time), opened on the first call. An error
// names the library and why it could not be opened or lacks a function; it is kept, so a
// missing library costs one attempt.
Result<const ArchiveCalls*> Libarchive();

// The process's libcurl, opened and globally initialised on the first call; as Libarchive().
Result<const CurlCalls*> Libcurl();

// Opens the library `soname` as libarchive or libcurl: what the two above do once. For tests of
// a library that is missing or is not the one asked for; the handle is never closed.
Result<ArchiveCalls> OpenLibarchive(const std::string& soname);
Result<CurlCalls> OpenLibcurl(const std::string& soname);

}  // namespace corral
