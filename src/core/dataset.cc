#include "core/dataset.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "core/dataset_key.h"
#include "core/dataset_kind.h"
#include "core/field_error.h"

namespace corral {
namespace {

bool IsHexDigest(const std::string& d) {
  const std::string prefix = "sha256:";
  if (d.size() != prefix.size() + 64 || d.compare(0, prefix.size(), prefix) != 0) return false;
  for (size_t i = prefix.size(); i < d.size(); ++i) {
    if (!std::isxdigit(static_cast<unsigned char>(d[i])) || std::isupper(d[i])) return false;
  }
  return true;
}

Result<int64_t> DatasetCount(const Json& body, const char* field) {
  auto it = body.find(field);
  if (it == body.end() || !it->is_number_integer() || it->get<int64_t>() < 0) {
    return FieldError(field, it == body.end() ? Json() : *it, "a non-negative integer");
  }
  return it->get<int64_t>();
}

Result<std::string> DatasetText(const Json& body, const char* field, bool required) {
  auto it = body.find(field);
  if (it == body.end() || it->is_null()) {
    if (required) return InvalidArgument(std::string("field '") + field + "': missing");
    return std::string();
  }
  if (!it->is_string()) return FieldError(field, *it, "a string");
  return it->get<std::string>();
}

// An absolute path without "." or ".." components, ',' or ':': a mount point in a container.
bool IsMountPath(const std::string& p) {
  if (p.size() < 2 || p[0] != '/' || p.size() > 1024) return false;
  if (p.find_first_of(",:") != std::string::npos) return false;
  size_t from = 1;
  while (from <= p.size()) {
    size_t slash = std::min(p.find('/', from), p.size());
    const std::string part = p.substr(from, slash - from);
    if (part == "." || part == "..") return false;
    from = slash + 1;
  }
  return true;
}

bool DatasetNameEndsWith(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

bool IsArchiveName(const std::string& path) {
  return DatasetNameEndsWith(path, ".tar") || DatasetNameEndsWith(path, ".tar.gz") ||
         DatasetNameEndsWith(path, ".tgz");
}

std::string DatasetKey(const std::string& name, const std::string& version) {
  return name + "@" + version;
}

std::pair<std::string, std::string> SplitDatasetKey(const std::string& text) {
  const size_t at = text.find('@');
  if (at == std::string::npos) return {text, ""};
  return {text.substr(0, at), text.substr(at + 1)};
}

std::string DatasetSourceKey(const std::string& source) {
  const size_t scheme_end = source.find("://");
  if (scheme_end == std::string::npos) {
    // A path: the directory that holds it (the root holds "/x").
    const size_t slash = source.find_last_of('/');
    return slash == std::string::npos || slash == 0 ? "/" : source.substr(0, slash);
  }
  std::string scheme = source.substr(0, scheme_end);
  const size_t host = scheme_end + 3;
  std::string authority = source.substr(host, source.find('/', host) - host);
  authority = authority.substr(authority.find('@') + 1);  // no user's credentials in a key
  std::transform(scheme.begin(), scheme.end(), scheme.begin(), ::tolower);
  std::transform(authority.begin(), authority.end(), authority.begin(), ::tolower);
  if (authority.find(':', authority.rfind(']') + 1) == std::string::npos) {
    authority += scheme == "https" ? ":443" : ":80";
  }
  return scheme + "://" + authority;
}

Status CheckSourceText(const std::string& source) {
  if (SourceKindOf(source) == DatasetSourceKind::kUrl) {
    const size_t host = source.find("://") + 3;
    const size_t path = source.find('/', host);
    if (path == std::string::npos || path == host || !IsArchiveName(source.substr(path))) {
      return FieldError("source", source,
                        "an http(s) URL of an archive (.tar, .tar.gz or .tgz) with a host");
    }
  } else if (source.empty() || source[0] != '/' || source.find("://") != std::string::npos) {
    return FieldError("source", source,
                      "an absolute path to a directory or an archive, or an http(s) URL");
  }
  return Status::Ok();
}

DatasetSourceKind SourceKindOf(const std::string& source) {
  if (source.rfind("http://", 0) == 0 || source.rfind("https://", 0) == 0) {
    return DatasetSourceKind::kUrl;
  }
  return IsArchiveName(source) ? DatasetSourceKind::kArchive : DatasetSourceKind::kDirectory;
}

Json ToJson(const Dataset& d) {
  return Json{{"name", d.name},     {"version", d.version},  {"source", d.source},
              {"digest", d.digest}, {"files", d.files},      {"bytes", d.bytes},
              {"owner", d.owner},   {"added_at", d.added_at}};
}

Result<Dataset> DatasetFromJson(const Json& j) {
  if (!j.is_object() || !j.contains("name")) return InvalidArgument("dataset: not a document");
  try {
    Dataset d;
    d.name = j.at("name").get<std::string>();
    d.version = j.value("version", "");
    d.source = j.value("source", "");
    d.digest = j.value("digest", "");
    d.files = j.value("files", int64_t{0});
    d.bytes = j.value("bytes", int64_t{0});
    d.owner = j.value("owner", "");
    d.added_at = j.value("added_at", TimeMs{0});
    return d;
  } catch (const Json::exception& e) {
    return InvalidArgument(std::string("dataset: ") + e.what());
  }
}

Result<Dataset> ParseDataset(const Json& body) {
  if (!body.is_object()) return InvalidArgument("dataset: want a JSON object");
  static const std::set<std::string> kKnown = {"name",   "source", "version",
                                               "digest", "files",  "bytes"};
  for (const auto& [key, value] : body.items()) {
    if (!kKnown.count(key)) {
      return InvalidArgument("field '" + key +
                             "': unknown (known: name, source, version, digest, files, bytes)");
    }
  }
  Dataset d;
  auto name = DatasetText(body, "name", true);
  if (!name.ok()) return name.status();
  if (!IsGoodName(*name)) {
    return FieldError("name", *name, "1-64 letters, digits, '-', '_' or '.'");
  }
  d.name = *name;
  auto source = DatasetText(body, "source", true);
  if (!source.ok()) return source.status();
  CORRAL_RETURN_IF_ERROR(CheckSourceText(*source));
  d.source = *source;
  auto digest = DatasetText(body, "digest", true);
  if (!digest.ok()) return digest.status();
  if (!IsHexDigest(*digest)) return FieldError("digest", *digest, "sha256:<64 lowercase hex>");
  d.digest = *digest;
  auto version = DatasetText(body, "version", false);
  if (!version.ok()) return version.status();
  if (version->empty()) {
    d.version = d.digest.substr(7, kShortDigest);
  } else if (!IsGoodName(*version)) {
    return FieldError("version", *version, "1-64 letters, digits, '-', '_' or '.'");
  } else {
    d.version = *version;
  }
  auto files = DatasetCount(body, "files");
  if (!files.ok()) return files.status();
  auto bytes = DatasetCount(body, "bytes");
  if (!bytes.ok()) return bytes.status();
  d.files = *files;
  d.bytes = *bytes;
  return d;
}

Json ToJson(const DatasetView& v) {
  Json j = ToJson(v.dataset);
  j.update({{"users", v.users}, {"nodes", v.nodes}, {"state", v.State()}});
  return j;
}

Result<DatasetView> DatasetViewFromJson(const Json& j) {
  auto d = DatasetFromJson(j);
  if (!d.ok()) return d.status();
  try {
    DatasetView v;
    v.dataset = std::move(*d);
    v.users = j.at("users").get<std::vector<uint64_t>>();
    v.nodes = j.at("nodes").get<std::vector<std::string>>();
    return v;
  } catch (const Json::exception& e) {
    return InvalidArgument(std::string("dataset: ") + e.what());
  }
}

Json ToJson(const DatasetRef& r) {
  Json j{{"name", r.name}};
  if (!r.version.empty()) j["version"] = r.version;
  if (!r.mount.empty()) j["mount"] = r.mount;
  if (!r.digest.empty()) {
    j.update({{"digest", r.digest}, {"source", r.source}, {"files", r.files}, {"bytes", r.bytes}});
  }
  return j;
}

Result<DatasetRef> DatasetRefFromJson(const Json& j) {
  if (!j.is_object() || !j.contains("name")) return InvalidArgument("dataset: not a reference");
  try {
    DatasetRef r;
    r.name = j.at("name").get<std::string>();
    r.version = j.value("version", "");
    r.mount = j.value("mount", "");
    r.digest = j.value("digest", "");
    r.source = j.value("source", "");
    r.files = j.value("files", int64_t{0});
    r.bytes = j.value("bytes", int64_t{0});
    return r;
  } catch (const Json::exception& e) {
    return InvalidArgument(std::string("dataset: ") + e.what());
  }
}

Result<DatasetRef> ParseDatasetRef(const std::string& field, const std::string& text) {
  DatasetRef r;
  std::string rest = text;
  if (size_t colon = rest.find(':'); colon != std::string::npos) {
    r.mount = rest.substr(colon + 1);
    rest = rest.substr(0, colon);
    if (!IsMountPath(r.mount)) {
      return FieldError(field, text, "NAME[@VERSION][:MOUNT] with MOUNT an absolute path");
    }
  }
  if (size_t at = rest.find('@'); at != std::string::npos) {
    r.version = rest.substr(at + 1);
    rest = rest.substr(0, at);
    if (!IsGoodName(r.version)) {
      return FieldError(field, text,
                        "NAME[@VERSION][:MOUNT] with a version of 1-64 letters, "
                        "digits, '-', '_' or '.'");
    }
  }
  if (!IsGoodName(rest)) {
    return FieldError(field, text,
                      "NAME[@VERSION][:MOUNT], a name of 1-64 letters, digits, '-', "
                      "'_' or '.'");
  }
  r.name = rest;
  return r;
}

Result<std::vector<DatasetRef>> ParseDatasetRefs(const std::string& field, const Json& v) {
  if (!v.is_array()) return FieldError(field, v, "an array of NAME[@VERSION][:MOUNT]");
  std::vector<DatasetRef> out;
  std::set<std::string> seen;
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string at = field + "[" + std::to_string(i) + "]";
    Result<DatasetRef> r = InvalidArgument("");
    if (v[i].is_string()) {
      r = ParseDatasetRef(at, v[i].get<std::string>());
    } else if (v[i].is_object()) {
      for (const auto& [key, value] : v[i].items()) {
        if (key != "name" && key != "version" && key != "mount") {
          return FieldError(at + "." + key, value, "one of name, version, mount");
        }
        if (!value.is_string()) return FieldError(at + "." + key, value, "a string");
      }
      std::string text = v[i].value("name", "");
      if (!v[i].value("version", "").empty()) text += "@" + v[i].value("version", "");
      if (!v[i].value("mount", "").empty()) text += ":" + v[i].value("mount", "");
      r = ParseDatasetRef(at, text);
    } else {
      return FieldError(at, v[i], "NAME[@VERSION][:MOUNT] or {name, version, mount}");
    }
    if (!r.ok()) return r.status();
    if (!seen.insert(r->name).second) return FieldError(at, v[i], "each dataset once");
    out.push_back(std::move(*r));
  }
  return out;
}

std::string DatasetEnvName(const std::string& name) {
  std::string out = "CORRAL_DATASET_";
  for (char c : name) {
    out += std::isalnum(static_cast<unsigned char>(c))
               ? static_cast<char>(std::toupper(static_cast<unsigned char>(c)))
               : '_';
  }
  return out;
}

std::string DefaultDatasetMount(const std::string& name) { return "/datasets/" + name; }

}  // namespace corral
