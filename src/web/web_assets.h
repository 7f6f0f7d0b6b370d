// The web dashboard's files (web/ in the source tree), compiled into the binary at build time
// by embed_assets.cmake: the head serves them without reading anything from disk, and an
// installed binary needs no JavaScript build step or asset directory.
#pragma once

#include <string_view>
#include <vector>

namespace corral::web {

struct Asset {
  std::string_view path;          // as served: "/" for index.html, else "/ui/<file>"
  std::string_view content_type;  // from the file's extension
  std::string_view etag;          // quoted, from the file's SHA-256 at build time
  std::string_view body;
};

// Every embedded file (generated code).
const std::vector<Asset>& Assets();

}  // namespace corral::web
