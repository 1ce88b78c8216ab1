#include "config/yaml_util.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <yaml-cpp/depthguard.h>

#include "common/model_name.h"
#include "config/yaml_limits.h"

namespace servelab::config {

namespace fs = std::filesystem;

void fail(const Where& w, const YAML::Node& node, const std::string& msg) {
  std::string where = w.file;
  if (node.IsDefined() && node.Mark().line >= 0) {
    where += (where.empty() ? "line " : ":") + std::to_string(node.Mark().line + 1);
  }
  if (!where.empty()) where += ": ";
  throw ConfigError(where + (w.path.empty() ? "" : w.path + ": ") + msg);
}

void require_map(const YAML::Node& node, const Where& w) {
  if (node.IsDefined() && !node.IsNull() && !node.IsMap()) fail(w, node, "expected a mapping");
}

void check_keys(const YAML::Node& node, const Where& w, const std::vector<std::string>& known) {
  require_map(node, w);
  if (!node.IsDefined() || !node.IsMap()) return;  // absent keys are invalid nodes in yaml-cpp
  for (const auto& kv : node) {
    std::string key = kv.first.as<std::string>();
    bool ok = false;
    for (const std::string& k : known) ok = ok || k == key;
    if (ok) continue;
    std::string list;
    for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
    fail(w.child(key), kv.first, "unknown key '" + key + "' (known: " + list + ")");
  }
}

std::string as_string(const YAML::Node& node, const Where& w) {
  if (!node.IsScalar()) fail(w, node, "expected a scalar value");
  return node.Scalar();
}

std::string as_model_name(const YAML::Node& node, const Where& w) {
  std::string name = as_string(node, w);
  if (std::string why = model_name_problem(name); !why.empty()) fail(w, node, why);
  return name;
}

double as_double(const YAML::Node& node, const Where& w) {
  std::string s = as_string(node, w);
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(s.c_str(), &end);
  if (s.empty() || *end != '\0' || errno || std::isnan(v)) {
    fail(w, node, "expected a number, got '" + s + "'");
  }
  return v;
}

uint64_t as_uint(const YAML::Node& node, const Where& w) {
  std::string s = as_string(node, w);
  char* end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  if (s.empty() || s[0] == '-' || *end != '\0' || errno) {
    fail(w, node, "expected a non-negative integer, got '" + s + "'");
  }
  return v;
}

bool as_bool(const YAML::Node& node, const Where& w) {
  std::string s = as_string(node, w);
  if (s == "true" || s == "yes" || s == "on" || s == "1") return true;
  if (s == "false" || s == "no" || s == "off" || s == "0") return false;
  fail(w, node, "expected true or false, got '" + s + "'");
}

std::string as_param_string(const YAML::Node& node, const Where& w) {
  if (node.IsScalar()) return node.Scalar();
  if (node.IsSequence()) {
    std::string out;
    for (const auto& item : node) out += (out.empty() ? "" : ",") + as_string(item, w);
    return out;
  }
  fail(w, node, "expected a scalar or a list of scalars");
}

std::string read_text(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) throw ConfigError("cannot read " + path + " (a directory)");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError("cannot read " + path);
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw ConfigError("cannot read " + path);
  return text.str();
}

YAML::Node load_text(const std::string& text, const std::string& name) {
  try {
    check_yaml_text(text, name);
    return YAML::Load(text);
  } catch (const YAML::DeepRecursion& e) {
    throw ConfigError(name + ":" + std::to_string(e.mark.line + 1) + ": nested deeper than " +
                      std::to_string(kMaxYamlDepth) + " levels (the limit for a config file)");
  } catch (const YAML::ParserException& e) {
    throw ConfigError(name + ":" + std::to_string(e.mark.line + 1) + ": YAML syntax error: " +
                      e.msg);
  }
}

YAML::Node load_file(const std::string& path) { return load_text(read_text(path), path); }

void apply_override(YAML::Node& root, const std::string& assignment) {
  size_t eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw ConfigError("--set expects key=value, got '" + assignment + "'");
  }
  std::string key = assignment.substr(0, eq);
  YAML::Node value;
  try {
    value = YAML::Load(assignment.substr(eq + 1));
  } catch (const YAML::ParserException& e) {
    throw ConfigError("--set " + key + ": bad value: " + e.msg);
  }
  std::vector<std::string> parts;
  for (size_t begin = 0;;) {
    size_t dot = key.find('.', begin);
    parts.push_back(key.substr(begin, dot - begin));
    if (dot == std::string::npos) break;
    begin = dot + 1;
  }
  // yaml-cpp nodes are handles: walk with reset() so assignment writes into the tree.
  YAML::Node cur = root;
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    if (parts[i].empty()) throw ConfigError("--set: empty key segment in '" + key + "'");
    if (cur[parts[i]] && !cur[parts[i]].IsMap() && !cur[parts[i]].IsNull()) {
      throw ConfigError("--set " + key + ": '" + parts[i] + "' is not a mapping");
    }
    if (!cur[parts[i]] || cur[parts[i]].IsNull()) cur[parts[i]] = YAML::Node(YAML::NodeType::Map);
    YAML::Node next = cur[parts[i]];
    cur.reset(next);
  }
  cur[parts.back()] = value;
}

void merge_into(YAML::Node target, const YAML::Node& over) {
  if (!over.IsMap()) return;
  for (const auto& kv : over) {
    std::string key = kv.first.as<std::string>();
    YAML::Node t = target[key];
    if (t.IsMap() && kv.second.IsMap()) merge_into(t, kv.second);
    else target[key] = YAML::Clone(kv.second);
  }
}

}  // namespace servelab::config
