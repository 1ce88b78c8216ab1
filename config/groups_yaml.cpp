#include "config/groups_yaml.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include <nlohmann/json.hpp>

#include "config/engine_yaml.h"
#include "engine/control/ensemble_dispatch.h"

namespace servelab::config {

namespace fs = std::filesystem;

namespace {

std::string resolve(const std::string& p, const std::string& base_dir) {
  if (p.empty() || fs::path(p).is_absolute() || base_dir.empty()) return p;
  return (fs::path(base_dir) / p).lexically_normal().string();
}

std::string joined(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

bool is_model(const std::vector<ModelEntry>& models, const std::string& name) {
  return std::any_of(models.begin(), models.end(), [&](const ModelEntry& m) { return m.name == name; });
}

std::vector<std::string> parse_members(const YAML::Node& n, const Where& w,
                                       const std::vector<ModelEntry>& models) {
  if (!n || !n.IsSequence() || n.size() == 0)
    fail(w, n, "expected a non-empty list of model names (at most " +
                   std::to_string(kMaxGroupMembers) + ")");
  if (n.size() > kMaxGroupMembers)
    fail(w, n, "at most " + std::to_string(kMaxGroupMembers) + " members");
  std::vector<std::string> members;
  for (size_t i = 0; i < n.size(); ++i) {
    const std::string m = as_model_name(n[i], w.child(std::to_string(i)));
    if (!is_model(models, m)) fail(w.child(std::to_string(i)), n[i], "'" + m + "' is not in models");
    if (std::find(members.begin(), members.end(), m) != members.end())
      fail(w.child(std::to_string(i)), n[i], "member '" + m + "' listed twice");
    members.push_back(m);
  }
  return members;
}

GroupEntry parse_group(const std::string& name, const YAML::Node& n, const Where& w,
                       const std::vector<ModelEntry>& models, const std::string& base_dir) {
  check_keys(n, w, {"members", "accuracy_table", "subset", "dispatch"});
  if (!n.IsMap()) fail(w, n, "expected {members, accuracy_table, subset or dispatch}");
  GroupEntry g;
  g.name = name;
  if (is_model(models, g.name)) fail(w, n, "'" + g.name + "' is a model's name");
  g.members = parse_members(n["members"], w.child("members"), models);
  if (!n["accuracy_table"]) fail(w, n, "needs 'accuracy_table' (a JSON file, docs/config.md)");
  g.accuracy_table = resolve(as_string(n["accuracy_table"], w.child("accuracy_table")), base_dir);
  g.subset = parse_policy(n["subset"], w.child("subset"), g.subset);
  g.dispatch = parse_policy(n["dispatch"], w.child("dispatch"), g.dispatch);
  if (g.dispatch.params.has("weights"))  // a file named in the config: relative to it
    g.dispatch.params.set("weights", resolve(g.dispatch.params.get_string("weights", ""), base_dir));
  if (n["subset"] && n["dispatch"])
    fail(w, n, "give 'subset' (members chosen per request) or 'dispatch' (an ensemble "
               "dispatcher choosing batches and members), not both");
  try {
    make_subset_policy(g.subset, g.members);  // checks the name and the parameters
    if (!g.dispatch.name.empty()) check_ensemble_dispatcher(g.dispatch, g.members);
    g.accuracy = read_accuracy_table(g.accuracy_table, g.members);
  } catch (const ConfigError& e) {
    fail(w, n, e.what());
  }
  return g;
}

// The whole file first: a directory opens as a stream and throws std::ios_base::failure only
// when read (found by the run_config fuzz target: `accuracy_table: experiments/`).
nlohmann::json read_json(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw ConfigError("cannot read accuracy table " + path + ": not a readable regular file");
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  if (!in || !(text << in.rdbuf())) throw ConfigError("cannot read accuracy table " + path);
  try {
    return nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::exception& e) {
    throw ConfigError("accuracy table " + path + " is not valid JSON: " + e.what());
  }
}

// The entry's members as a mask over `members`; 0 when one of them is not a member.
MemberMask entry_mask(const nlohmann::json& e, const std::string& path,
                      const std::vector<std::string>& members) {
  if (!e.is_object() || !e.contains("members") || !e["members"].is_array() ||
      !e.contains("accuracy") || !e["accuracy"].is_number())
    throw ConfigError("accuracy table " + path +
                      ": every ensembles entry needs members (a list) and accuracy (a number)");
  MemberMask mask = 0;
  for (const auto& name : e["members"]) {
    if (!name.is_string()) throw ConfigError("accuracy table " + path + ": member names are strings");
    auto it = std::find(members.begin(), members.end(), name.get<std::string>());
    if (it == members.end()) return 0;
    mask |= MemberMask(1) << (it - members.begin());
  }
  return mask;
}

std::vector<std::string> names_of(MemberMask mask, const std::vector<std::string>& members) {
  std::vector<std::string> out;
  for (size_t k = 0; k < members.size(); ++k)
    if (mask >> k & 1) out.push_back(members[k]);
  return out;
}

}  // namespace

EnsembleAccuracy read_accuracy_table(const std::string& path,
                                     const std::vector<std::string>& members) {
  const nlohmann::json j = read_json(path);
  if (!j.is_object() || !j.contains("ensembles") || !j["ensembles"].is_array())
    throw ConfigError("accuracy table " + path + " has no 'ensembles' list");
  EnsembleAccuracy table;
  table.by_mask.assign(size_t(1) << members.size(), std::numeric_limits<double>::quiet_NaN());
  for (const auto& e : j["ensembles"]) {
    const MemberMask mask = entry_mask(e, path, members);
    if (mask == 0) continue;
    const double a = e["accuracy"].get<double>();
    if (!(a >= 0 && a <= 1))
      throw ConfigError("accuracy table " + path + ": accuracy " + std::to_string(a) +
                        " of [" + joined(names_of(mask, members)) + "] is not in 0..1");
    table.by_mask[mask] = a;
  }
  for (MemberMask mask = 1; mask < table.by_mask.size(); ++mask)
    if (std::isnan(table.by_mask[mask]))
      throw ConfigError("accuracy table " + path + " has no entry for members [" +
                        joined(names_of(mask, members)) + "] (it needs every subset)");
  return table;
}

std::vector<GroupEntry> parse_groups_section(const YAML::Node& n, const Where& w,
                                             const std::vector<ModelEntry>& models,
                                             const std::string& base_dir) {
  std::vector<GroupEntry> groups;
  if (!n || n.IsNull()) return groups;
  if (!n.IsMap())
    fail(w, n, "expected a mapping of group names to {members, accuracy_table, subset or "
               "dispatch}");
  for (const auto& kv : n) {
    const std::string name = as_model_name(kv.first, w);
    groups.push_back(parse_group(name, kv.second, w.child(name), models, base_dir));
  }
  return groups;
}

YAML::Node emit_groups_section(const std::vector<GroupEntry>& groups) {
  YAML::Node out;
  for (const GroupEntry& g : groups) {
    YAML::Node n;
    for (const std::string& m : g.members) n["members"].push_back(m);
    n["accuracy_table"] = fs::absolute(g.accuracy_table).lexically_normal().string();
    if (g.dispatch.name.empty()) n["subset"] = emit_policy(g.subset);
    else n["dispatch"] = emit_policy(g.dispatch);
    out[g.name] = n;
  }
  return out;
}

}  // namespace servelab::config
