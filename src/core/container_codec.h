// A job's container (container_spec.h) as the head stores it and sends it to agents: one
// object, {"image", "mounts": [{"source", "destination", "read_only"}], "workdir", "writable",
// "mount_home"}; and a node's image cache as its agent reports it. Internal to the codec
// (codec.cc); the user's spec has flat fields (spec.cc).
#pragma once

#include <nlohmann/json.hpp>

#include "core/agent_protocol.h"
#include "core/container_spec.h"

namespace corral {

nlohmann::json ContainerJson(const ContainerSpec& c);
// Throws std::invalid_argument naming the field, as the codec's other decoders do.
ContainerSpec DecodeContainer(const nlohmann::json& j);

// A node's image cache in its sync: {"bytes", "images", "limit_bytes"}.
nlohmann::json ImageCacheJson(const ImageCacheReport& r);
ImageCacheReport DecodeImageCache(const nlohmann::json& j);

}  // namespace corral
