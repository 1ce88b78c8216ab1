// Parsing and validation of group definitions (group_definition.h).
#include "engine/server/group_definition.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "engine/control/ensemble_dispatch.h"
#include "engine/server/http_message.h"
#include "engine/server/json_error.h"
#include "engine/server/model_store.h"

namespace servelab::server {
using nlohmann::json;

namespace {

[[noreturn]] void bad(const std::string& why) { throw HttpError(400, "group: " + why); }

// A valid name or a 400 that says why (the name itself is echoed only once it is valid).
std::string checked_name(const json& v, const std::string& what) {
  if (!v.is_string()) bad(what + " must be a string");
  const std::string name = v.get<std::string>();
  if (std::string why = model_name_problem(name); !why.empty()) bad(what + ": " + why);
  return name;
}

std::vector<std::string> parse_members(const json& v) {
  if (!v.is_array() || v.empty() || v.size() > kMaxGroupMembers)
    bad("members must be a list of 1.." + std::to_string(kMaxGroupMembers) + " model names");
  std::vector<std::string> members;
  for (size_t k = 0; k < v.size(); ++k) {
    std::string name = checked_name(v[k], "members[" + std::to_string(k) + "]");
    if (std::find(members.begin(), members.end(), name) != members.end())
      bad("member '" + name + "' is listed twice");
    members.push_back(std::move(name));
  }
  return members;
}

// {"member": accuracy, ...} covering every member: the accuracies in member order.
std::vector<double> parse_accuracy(const json& v, const std::vector<std::string>& members) {
  if (!v.is_object()) bad("accuracy must be an object {member: accuracy in [0, 1]}");
  std::vector<double> accuracy(members.size(), 0.0);
  for (const auto& [key, value] : v.items()) {
    auto it = std::find(members.begin(), members.end(), key);
    if (it == members.end()) bad("accuracy names a model that is not a member");
    if (!value.is_number() || !(value.get<double>() >= 0) || !(value.get<double>() <= 1))
      bad("accuracy of '" + echo_value(key) + "' must be a number in [0, 1]");
    accuracy[size_t(it - members.begin())] = value.get<double>();
  }
  if (v.size() != members.size()) bad("accuracy must give every member's accuracy");
  return accuracy;
}

// A parameter as PolicyParams keeps it: a string; a number in decimal; a boolean as
// true/false; a list (of member names, or of numbers) joined with ',' (names cannot contain
// ','). `what` names the object in errors ("subset", "dispatch").
std::string param_text(const std::string& what, const std::string& key, const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer()) return std::to_string(v.get<long long>());
  if (v.is_number_float()) return v.dump();
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_array() && v.size() <= 64) {
    std::string list;
    for (const json& e : v) {
      list += list.empty() ? "" : ",";
      list += e.is_number() ? param_text(what, key, e) : checked_name(e, what + " " + key);
    }
    return list;
  }
  bad(what + " parameter '" + key + "' must be a string, a number, a boolean or a list");
}

// {"name": ..., parameters...} as a PolicySpec; `known` lists the registered names.
PolicySpec parse_spec(const json& v, const std::string& what, const std::string& known) {
  if (!v.is_object()) bad(what + " must be an object {\"name\": ..., parameters...}");
  PolicySpec spec;
  for (const auto& [key, value] : v.items()) {
    if (key == "name") {
      if (!value.is_string()) bad(what + " name must be a string");
      spec.name = value.get<std::string>();
    } else {
      spec.params.set(key, param_text(what, key, value));
    }
  }
  if (spec.name.empty()) bad(what + " needs a name (" + known + ")");
  return spec;
}

PolicySpec parse_subset(const json& v) {
  std::string known;
  for (const std::string& n : subset_policy_names()) known += (known.empty() ? "" : ", ") + n;
  return parse_spec(v, "subset", known);
}

// The dispatcher's name and parameters, checked as the registry checks them (a weights file
// is only named here: the server resolves and reads it).
PolicySpec parse_dispatch(const json& v, const std::vector<std::string>& members) {
  std::string known;
  for (const auto& d : ensemble_dispatchers()) known += (known.empty() ? "" : ", ") + d.name;
  PolicySpec spec = parse_spec(v, "dispatch", known);
  try {
    check_ensemble_dispatcher(spec, members);
  } catch (const ConfigError& e) {
    bad(e.what());
  }
  return spec;
}

}  // namespace

GroupDefinition parse_group_definition(std::string_view body) {
  if (body.size() > kMaxGroupBodyBytes)
    throw HttpError(413, "group: definition larger than " + std::to_string(kMaxGroupBodyBytes) +
                             " bytes");
  json j = json::parse(body, nullptr, false);
  if (j.is_discarded()) {
    const std::string why = json_error(body);  // a number out of range names its key
    bad(why.rfind("not valid JSON", 0) == 0 ? "the body must be a JSON object (" + why + ")" : why);
  }
  if (!j.is_object()) bad("the body must be a JSON object");
  for (const auto& [key, value] : j.items()) {
    if (key != "name" && key != "members" && key != "accuracy" && key != "subset" &&
        key != "dispatch")
      bad("unknown key (known: name, members, accuracy, subset, dispatch)");
  }
  if (!j.contains("name")) bad("name is missing");
  if (!j.contains("members")) bad("members is missing");
  GroupDefinition d;
  d.name = checked_name(j["name"], "name");
  d.members = parse_members(j["members"]);
  if (j.contains("accuracy")) d.accuracy = parse_accuracy(j["accuracy"], d.members);
  d.subset.name = "all";
  if (j.contains("subset") && j.contains("dispatch"))
    bad("give subset (members chosen per request) or dispatch (a dispatcher choosing each "
        "batch's size and members), not both");
  if (j.contains("subset")) d.subset = parse_subset(j["subset"]);
  if (j.contains("dispatch")) d.dispatch = parse_dispatch(j["dispatch"], d.members);
  try {
    make_subset_policy(d.subset, d.members);  // unknown policy, key or value: 400 now
  } catch (const ConfigError& e) {
    bad(e.what());
  }
  return d;
}

json group_definition_json(const GroupDefinition& d) {
  json subset = {{"name", d.subset.name}};
  for (const auto& [key, text] : d.subset.params.values()) {
    if (key == "members") {  // a list, as it was given
      json list = json::array();
      for (size_t from = 0; from <= text.size();) {
        size_t comma = std::min(text.find(',', from), text.size());
        list.push_back(text.substr(from, comma - from));
        from = comma + 1;
      }
      subset[key] = std::move(list);
    } else if (!text.empty() && std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
               text.size() < 10) {
      subset[key] = std::stoll(text);
    } else {
      subset[key] = text;
    }
  }
  json j = {{"name", d.name}, {"members", d.members}, {"subset", std::move(subset)}};
  if (!d.dispatch.name.empty()) {  // parameters as the strings PolicyParams keeps
    json dispatch = {{"name", d.dispatch.name}};
    for (const auto& [key, text] : d.dispatch.params.values()) dispatch[key] = text;
    j["dispatch"] = std::move(dispatch);
    j.erase("subset");
  }
  if (!d.accuracy.empty()) {
    json acc = json::object();
    for (size_t k = 0; k < d.members.size(); ++k) acc[d.members[k]] = d.accuracy[k];
    j["accuracy"] = std::move(acc);
  }
  return j;
}

}  // namespace servelab::server
