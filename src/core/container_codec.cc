#include "core/container_codec.h"

#include <stdexcept>

namespace corral {
namespace {

using Json = nlohmann::json;

std::string Text(const Json& j, const char* key, const std::string& fallback, bool required) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    if (required)
      throw std::invalid_argument(std::string("field 'container.") + key + "': missing");
    return fallback;
  }
  if (!it->is_string()) {
    throw std::invalid_argument(std::string("field 'container.") + key + "': not a string");
  }
  return it->get<std::string>();
}

bool Flag(const Json& j, const char* key, bool fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_boolean()) {
    throw std::invalid_argument(std::string("field 'container.") + key + "': not a boolean");
  }
  return it->get<bool>();
}

}  // namespace

ContainerSpec DecodeContainer(const Json& j) {
  if (!j.is_object()) throw std::invalid_argument("field 'container': not an object");
  ContainerSpec c;
  c.image = Text(j, "image", "", false);
  c.workdir = Text(j, "workdir", "", false);
  c.writable = Flag(j, "writable", false);
  c.mount_home = Flag(j, "mount_home", true);
  if (auto m = j.find("mounts"); m != j.end() && !m->is_null()) {
    if (!m->is_array()) throw std::invalid_argument("field 'container.mounts': not a list");
    for (const Json& x : *m) {
      if (!x.is_object()) throw std::invalid_argument("field 'container.mounts': not objects");
      c.mounts.push_back({Text(x, "source", "", true), Text(x, "destination", "", true),
                          Flag(x, "read_only", false)});
    }
  }
  return c;
}

Json ContainerJson(const ContainerSpec& c) {
  Json mounts = Json::array();
  for (const ContainerMount& m : c.mounts) {
    mounts.push_back(
        {{"source", m.source}, {"destination", m.destination}, {"read_only", m.read_only}});
  }
  return Json{{"image", c.image},
              {"mounts", std::move(mounts)},
              {"workdir", c.workdir},
              {"writable", c.writable},
              {"mount_home", c.mount_home}};
}

Json ImageCacheJson(const ImageCacheReport& r) {
  return Json{{"bytes", r.bytes}, {"images", r.images}, {"limit_bytes", r.limit_bytes}};
}

ImageCacheReport DecodeImageCache(const Json& j) {
  if (!j.is_object()) throw std::invalid_argument("field 'image_cache': not an object");
  ImageCacheReport r;
  r.bytes = j.value("bytes", int64_t{0});
  r.images = j.value("images", int32_t{0});
  r.limit_bytes = j.value("limit_bytes", int64_t{0});
  return r;
}

}  // namespace corral
