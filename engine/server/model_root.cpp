#include "engine/server/model_root.h"

#include <algorithm>
#include <filesystem>

#include "engine/server/model_store.h"

namespace servelab::server {
namespace fs = std::filesystem;

namespace {

bool has_control_byte(const std::string& s) {
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) return true;
  }
  return false;
}

// True when `p` is `dir` itself or lies below it (both canonical).
bool is_within(const fs::path& p, const fs::path& dir) {
  auto [d, q] = std::mismatch(dir.begin(), dir.end(), p.begin(), p.end());
  return d == dir.end();
}

}  // namespace

std::string resolve_model_path(const std::string& root, const std::string& store_dir,
                               const std::string& requested) {
  // The path is not echoed: one message for every refusal (and no NUL in a message).
  const StoreError refused("model path is not a readable regular file under the server's "
                           "model root");
  if (root.empty() || requested.empty() || has_control_byte(requested)) throw refused;
  std::error_code ec;
  fs::path canon_root = fs::canonical(root, ec);
  if (ec) throw refused;
  fs::path req(requested);
  if (req.is_relative()) req = canon_root / req;
  fs::path canon = fs::canonical(req, ec);  // resolves every symlink; fails when missing
  if (ec || !fs::is_regular_file(canon, ec) || ec) throw refused;
  if (canon == canon_root || !is_within(canon, canon_root)) throw refused;
  fs::path canon_store = fs::canonical(store_dir, ec);
  if (!ec && is_within(canon, canon_store)) throw refused;  // the registry database lives there
  return canon.string();
}

}  // namespace servelab::server
