// A job as the stores keep it: ToJson less the fields at the value JobFromJson assumes when they
// are missing. Most fields of most jobs are at their defaults, so this halves the documents,
// and with them the JSON a head parses at a restart (bench/head_restart.sh).
#include <initializer_list>

#include "core/codec.h"

namespace corral {
namespace {

// What a decoder assumes for each field it may miss: the encoding of a default value, less the
// fields it requires. REQUIRES: `required` names every field the decoder reads with at() or
// Req; codec_test's stored round trip of default values fails otherwise.
Json Omittable(Json encoded_default, std::initializer_list<const char*> required) {
  for (const char* key : required) encoded_default.erase(key);
  return encoded_default;
}

struct Defaults {
  // owner and the spec's queue stay: the stores' SQL reads them, with ended_at, from the
  // document when it retires a job (RetireJob), and so do this tree's earlier binaries.
  Json job = Omittable(ToJson(Job{}), {"id", "spec", "state", "runs", "owner", "ended_at"});
  Json spec = Omittable(ToJson(JobSpec{}), {"queue"});
  Json run = Omittable(ToJson(Run{}), {"attempt", "placement", "state"});
  Json placement = Omittable(ToJson(ReplicaPlacement{}), {"node", "gpus"});
  Json step = Omittable(ToJson(Step{}), {"id", "command", "replicas", "tasks"});
  Json event = Json{{"reason", ""}};  // "at" and "what" are required
};

void EraseDefaults(Json& doc, const Json& defaults) {
  for (auto it = doc.begin(); it != doc.end();) {
    auto d = defaults.find(it.key());
    if (d != defaults.end() && *d == *it) {
      it = doc.erase(it);
    } else {
      ++it;
    }
  }
}

void EraseDefaultsOfEach(Json& list, const Json& defaults) {
  for (Json& item : list) EraseDefaults(item, defaults);
}

}  // namespace

Json ToStoredJson(const Job& job) {
  static const Defaults d;
  Json j = ToJson(job);
  EraseDefaults(j, d.job);
  EraseDefaults(j["spec"], d.spec);
  for (Json& r : j["runs"]) {
    EraseDefaults(r, d.run);
    EraseDefaultsOfEach(r["placement"], d.placement);
    if (auto steps = r.find("steps"); steps != r.end()) EraseDefaultsOfEach(*steps, d.step);
  }
  if (auto events = j.find("events"); events != j.end()) EraseDefaultsOfEach(*events, d.event);
  return j;
}

}  // namespace corral
