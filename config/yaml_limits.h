// The limits every YAML config (run configs, experiments, profiles, `serve --config`) is read
// under, checked on the text before a tree is built: a small file cannot expand, by aliases or
// by keys, into a large tree, nest deeper than any config needs, or write a key twice.
// Stateless; any thread.
#pragma once

#include <cstdint>
#include <string>

namespace servelab::config {

// Nodes the first document may expand to, counting every scalar, key and collection, and an
// alias once per use with the whole of what it names.
inline constexpr uint64_t kMaxYamlNodes = 200'000;
// Collections nested inside each other.
inline constexpr uint32_t kMaxYamlDepth = 64;

// Throws ConfigError "NAME:LINE: ..." when `text` breaks a limit or repeats a key in one
// mapping (yaml-cpp would keep both and answer with the first). Syntax errors are left to the
// parser that reads the text next. Linear in the text's size.
void check_yaml_text(const std::string& text, const std::string& name);

}  // namespace servelab::config
