// The one rule for model names, shared by the server (names are file names in the model store
// and segments of URLs) and the configs (a profile or a run config names models the engine
// registers). Header-only, no state.
#pragma once

#include <string>
#include <string_view>

namespace servelab {

// Valid names are 1..64 characters of [A-Za-z0-9._-], not starting with '.'. Returns an empty
// string when `name` is valid, else a user-facing reason that does not echo the name (it may
// hold control bytes or invalid UTF-8).
inline std::string model_name_problem(std::string_view name) {
  if (name.empty()) return "model name is empty";
  if (name.size() > 64) return "model name is longer than 64 characters";
  if (name.front() == '.') return "model name must not start with '.'";
  for (char c : name) {
    if (c == '/' || c == '\\') return "model name must not contain path separators";
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    if (!ok) return "model name may only contain letters, digits, '.', '_' and '-'";
  }
  return "";
}

}  // namespace servelab
