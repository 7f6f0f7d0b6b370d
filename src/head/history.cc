#include "head/history.h"

#include <string>

namespace corral::head {

Json ToJson(const History& h) {
  Json jobs = Json::array(), nodes = Json::array(), queues = Json::array();
  for (const Job& j : h.jobs) jobs.push_back(ToJson(j));
  for (const Node& n : h.nodes) nodes.push_back(ToJson(n));
  for (const QueueConfig& q : h.queues) queues.push_back(ToJson(q));
  return Json{{"now", h.now},
              {"from", h.from},
              {"scheduler",
               {{"policy", sched::OrderPolicyName(h.policy)},
                {"min_runtime_before_preempt_ms", h.min_runtime_before_preempt_ms},
                {"fair_share_half_life_ms", h.fair_share_half_life_ms}}},
              {"jobs", std::move(jobs)},
              {"nodes", std::move(nodes)},
              {"queues", std::move(queues)}};
}

namespace {

Status Field(const std::string& name, const std::string& why) {
  return InvalidArgument("history: field '" + name + "': " + why);
}

// An integer field of `j` into *out; absent or not a whole number: an error naming it.
Status Int(const Json& j, const std::string& name, int64_t* out) {
  auto it = j.find(name);
  if (it == j.end() || !it->is_number_integer()) return Field(name, "want an integer");
  *out = it->get<int64_t>();
  return Status::Ok();
}

// Decodes each element of the list `name` with `decode` into *out.
template <typename T, typename F>
Status List(const Json& j, const std::string& name, F decode, std::vector<T>* out) {
  auto it = j.find(name);
  if (it == j.end() || !it->is_array()) return Field(name, "want a list");
  for (size_t i = 0; i < it->size(); ++i) {
    Result<T> v = decode((*it)[i]);
    if (!v.ok()) return Field(name + "[" + std::to_string(i) + "]", v.status().message());
    out->push_back(std::move(*v));
  }
  return Status::Ok();
}

}  // namespace

Result<History> HistoryFromJson(const Json& j) {
  if (!j.is_object()) return InvalidArgument("history: want a JSON object");
  History h;
  CORRAL_RETURN_IF_ERROR(Int(j, "now", &h.now));
  CORRAL_RETURN_IF_ERROR(Int(j, "from", &h.from));
  auto s = j.find("scheduler");
  if (s == j.end() || !s->is_object()) return Field("scheduler", "want an object");
  auto policy = s->find("policy");
  if (policy == s->end() || !policy->is_string() ||
      !sched::ParseOrderPolicy(policy->get<std::string>(), &h.policy)) {
    return Field("scheduler.policy", "want a policy name");
  }
  CORRAL_RETURN_IF_ERROR(
      Int(*s, "min_runtime_before_preempt_ms", &h.min_runtime_before_preempt_ms));
  CORRAL_RETURN_IF_ERROR(Int(*s, "fair_share_half_life_ms", &h.fair_share_half_life_ms));
  CORRAL_RETURN_IF_ERROR(List(j, "jobs", JobFromJson, &h.jobs));
  CORRAL_RETURN_IF_ERROR(List(j, "nodes", NodeFromJson, &h.nodes));
  CORRAL_RETURN_IF_ERROR(List(j, "queues", QueueFromJson, &h.queues));
  return h;
}

}  // namespace corral::head
