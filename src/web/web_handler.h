// Serves the embedded dashboard: GET/HEAD "/" (index.html) and "/ui/<file>", with ETag
// revalidation and the headers that keep the page to its own origin. The head's API calls
// this for the paths it claims (IsWebPath) and for nothing else.
#pragma once

#include <string>

#include "net/http.h"

namespace corral::web {

// The prefix of the dashboard's own files.
constexpr char kUiPrefix[] = "/ui/";

// True for "/" and anything under kUiPrefix (and kUiPrefix without its slash).
bool IsWebPath(const std::string& path);

// The answer for a web path: the file (200), 304 when If-None-Match holds its ETag, 404 for
// a name that is not embedded, 405 for a method other than GET or HEAD.
net::HttpResponse ServeWeb(const net::HttpRequest& req);

}  // namespace corral::web
