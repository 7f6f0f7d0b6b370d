#include "core/container_spec.h"

#include <cctype>

namespace corral {
namespace {

bool IsLowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

// A repository path component: [a-z0-9]+ joined by '.', '_', "__" or runs of '-'.
bool ValidComponent(const std::string& c) {
  if (c.empty() || !IsLowerAlnum(c.front()) || !IsLowerAlnum(c.back())) return false;
  for (size_t i = 1; i < c.size(); ++i) {
    char a = c[i - 1], b = c[i];
    if (!IsLowerAlnum(b) && b != '.' && b != '_' && b != '-') return false;
    bool sep_a = !IsLowerAlnum(a), sep_b = !IsLowerAlnum(b);
    if (sep_a && sep_b && !(a == '-' && b == '-') &&
        !(a == '_' && b == '_' && (i < 2 || c[i - 2] != '_'))) {
      return false;
    }
  }
  return true;
}

bool ValidTag(const std::string& t) {
  if (t.empty() || t.size() > 128) return false;
  if (!std::isalnum(static_cast<unsigned char>(t[0])) && t[0] != '_') return false;
  for (char c : t) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.' && c != '-') {
      return false;
    }
  }
  return true;
}

bool ValidDigest(const std::string& d) {
  if (d.rfind("sha256:", 0) != 0 || d.size() != 7 + 64) return false;
  for (size_t i = 7; i < d.size(); ++i) {
    if (!std::isxdigit(static_cast<unsigned char>(d[i])) || std::isupper(d[i])) return false;
  }
  return true;
}

bool ValidHost(const std::string& h) {
  if (h.empty() || h.size() > 255) return false;
  auto colon = h.rfind(':');
  std::string name = h.substr(0, colon);
  if (colon != std::string::npos) {
    std::string port = h.substr(colon + 1);
    if (port.empty() || port.size() > 5) return false;
    for (char c : port) {
      if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    }
  }
  if (name.empty()) return false;
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-') return false;
  }
  return true;
}

// An absolute path without "..", NUL, ':' or ',' (the mount string's separators).
bool CleanAbsolutePath(const std::string& p) {
  if (p.empty() || p[0] != '/' || p.size() > 4096) return false;
  if (p.find_first_of(std::string(":,\0\n", 4)) != std::string::npos) return false;
  size_t start = 0;
  while (start <= p.size()) {
    size_t slash = p.find('/', start);
    if (slash == std::string::npos) slash = p.size();
    if (p.compare(start, slash - start, "..") == 0 && slash - start == 2) return false;
    start = slash + 1;
  }
  return true;
}

Status RefError(const std::string& field, const std::string& text, const std::string& why) {
  return InvalidArgument("field '" + field + "': got \"" + text + "\": " + why +
                         "; want a registry reference (registry:5000/name:tag or "
                         "name@sha256:<64 hex>), oci-archive:/path.tar, oci:/layout-dir[:tag] "
                         "or an absolute path");
}

}  // namespace

std::string ImageRef::Canonical() const {
  switch (kind) {
    case Kind::kOciArchive:
      return "oci-archive:" + path;
    case Kind::kOciLayout:
      return "oci:" + path + (tag.empty() ? "" : ":" + tag);
    case Kind::kPath:
      return path;
    case Kind::kRegistry:
      break;
  }
  std::string out = registry + "/" + repository;
  if (!tag.empty()) out += ":" + tag;
  if (!digest.empty()) out += "@" + digest;
  return out;
}

namespace {

// oci-archive:/file.tar (kOciArchive) or oci:/dir[:tag] (kOciLayout).
Result<ImageRef> ParseOciImageRef(const std::string& field, const std::string& text) {
  auto path_ok = [&](const std::string& p) { return CleanAbsolutePath(p) || p == "/"; };
  ImageRef r;
  if (text.rfind("oci-archive:", 0) == 0) {
    r.kind = ImageRef::Kind::kOciArchive;
    r.path = text.substr(12);
    if (!path_ok(r.path) || r.path == "/") {
      return RefError(field, text, "an OCI archive must be an absolute path");
    }
    return r;
  }
  r.kind = ImageRef::Kind::kOciLayout;
  std::string rest = text.substr(4);
  auto colon = rest.find(':');
  r.path = rest.substr(0, colon);
  if (colon != std::string::npos) r.tag = rest.substr(colon + 1);
  if (!path_ok(r.path) || r.path == "/") {
    return RefError(field, text, "an OCI layout must be an absolute directory");
  }
  if (colon != std::string::npos && !ValidTag(r.tag)) {
    return RefError(field, text, "bad tag '" + r.tag + "'");
  }
  return r;
}

// Takes the registry off the front of `rest` into r->registry: the first component if it looks
// like a host (a '.' or a port, or localhost), else docker.io (whose one-component names are
// under library/).
Status TakeRegistry(const std::string& field, const std::string& text, std::string& rest,
                    ImageRef* r) {
  auto slash = rest.find('/');
  std::string first = rest.substr(0, slash);
  if (slash != std::string::npos &&
      (first.find('.') != std::string::npos || first.find(':') != std::string::npos ||
       first == "localhost")) {
    r->registry = first;
    rest = rest.substr(slash + 1);
    if (!ValidHost(r->registry)) return RefError(field, text, "bad registry '" + r->registry + "'");
    return Status::Ok();
  }
  r->registry = "docker.io";
  if (slash == std::string::npos) rest = "library/" + rest;
  return Status::Ok();
}

// The repository's path: at most 255 bytes of valid components.
Status CheckRepository(const std::string& field, const std::string& text,
                       const std::string& repository) {
  if (repository.empty() || repository.size() > 255) {
    return RefError(field, text, "no image name");
  }
  size_t start = 0;
  while (start <= repository.size()) {
    size_t s = repository.find('/', start);
    if (s == std::string::npos) s = repository.size();
    if (!ValidComponent(repository.substr(start, s - start))) {
      return RefError(field, text,
                      "bad name component '" + repository.substr(start, s - start) +
                          "' (lower-case letters, digits, '.', '_', '-')");
    }
    start = s + 1;
  }
  return Status::Ok();
}

// [docker://][registry/]name[:tag][@sha256:digest]
Result<ImageRef> ParseRegistryImageRef(const std::string& field, const std::string& text) {
  ImageRef r;
  std::string rest = text;
  if (rest.rfind("docker://", 0) == 0) rest = rest.substr(9);
  if (auto at = rest.find('@'); at != std::string::npos) {
    r.digest = rest.substr(at + 1);
    rest = rest.substr(0, at);
    if (!ValidDigest(r.digest)) {
      return RefError(field, text,
                      "bad digest '" + r.digest + "' (want sha256: and 64 hex digits)");
    }
  }
  CORRAL_RETURN_IF_ERROR(TakeRegistry(field, text, rest, &r));
  auto last_slash = rest.rfind('/');
  auto colon = rest.rfind(':');
  if (colon != std::string::npos && (last_slash == std::string::npos || colon > last_slash)) {
    r.tag = rest.substr(colon + 1);
    rest = rest.substr(0, colon);
    if (!ValidTag(r.tag)) return RefError(field, text, "bad tag '" + r.tag + "'");
  }
  CORRAL_RETURN_IF_ERROR(CheckRepository(field, text, rest));
  r.repository = rest;
  if (r.tag.empty() && r.digest.empty()) r.tag = "latest";
  return r;
}

}  // namespace

Result<ImageRef> ParseImageRef(const std::string& field, const std::string& text) {
  if (text.empty()) return RefError(field, text, "empty");
  if (text.size() > 1024) return RefError(field, text.substr(0, 64) + "...", "over 1024 bytes");
  if (text[0] == '/') {
    if (!CleanAbsolutePath(text)) {
      return RefError(field, text, "a path with '..', ':' or ','");
    }
    ImageRef r;
    r.kind = ImageRef::Kind::kPath;
    r.path = text;
    return r;
  }
  if (text.rfind("oci-archive:", 0) == 0 || text.rfind("oci:", 0) == 0) {
    return ParseOciImageRef(field, text);
  }
  return ParseRegistryImageRef(field, text);
}

Status ValidateMount(const std::string& field, const ContainerMount& m) {
  const std::string text = FormatMount(m);
  if (!CleanAbsolutePath(m.source)) {
    return InvalidArgument("field '" + field + "': got \"" + text + "\": source '" + m.source +
                           "' is not an absolute path without '..', ':' or ','");
  }
  if (!CleanAbsolutePath(m.destination)) {
    return InvalidArgument("field '" + field + "': got \"" + text + "\": destination '" +
                           m.destination + "' is not an absolute path without '..', ':' or ','");
  }
  std::string d = m.destination;
  while (d.size() > 1 && d.back() == '/') d.pop_back();
  for (const char* banned : {"/", "/proc", "/sys", "/dev"}) {
    const std::string b = banned;
    if (d == b || (b != "/" && d.rfind(b + "/", 0) == 0)) {
      return InvalidArgument("field '" + field + "': got \"" + text + "\": destination " +
                             m.destination + " is the container's root, /proc, /sys or /dev");
    }
  }
  return Status::Ok();
}

Result<ContainerMount> ParseMount(const std::string& field, const std::string& text) {
  ContainerMount m;
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t c = text.find(':', start);
    parts.push_back(text.substr(start, c - start));
    if (c == std::string::npos) break;
    start = c + 1;
  }
  auto bad = [&](const std::string& why) {
    return InvalidArgument("field '" + field + "': got \"" + text + "\": " + why +
                           "; want SRC:DST[:ro|rw] with absolute paths");
  };
  if (parts.size() < 2 || parts.size() > 3) return bad("not two or three ':'-separated parts");
  m.source = parts[0];
  m.destination = parts[1];
  if (parts.size() == 3) {
    if (parts[2] == "ro") {
      m.read_only = true;
    } else if (parts[2] != "rw") {
      return bad("unknown option '" + parts[2] + "'");
    }
  }
  CORRAL_RETURN_IF_ERROR(ValidateMount(field, m));
  return m;
}

std::string FormatMount(const ContainerMount& m) {
  return m.source + ":" + m.destination + (m.read_only ? ":ro" : "");
}

}  // namespace corral
