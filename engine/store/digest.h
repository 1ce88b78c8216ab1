// Digests of the model store, from maintained libraries: SHA-256 from OpenSSL's libcrypto
// names model files and weight blobs (collision resistant, so a hostile upload cannot make its
// tensor alias another model's); XXH3-64 from libxxhash checks a blob's bytes each time a
// process maps it (tens of GB/s: cheap enough to run on every open, where SHA-256 would cost a
// cold load's worth of time). Value types; one instance per stream; not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace servelab::store {

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void update(const void* data, size_t len);
  void update(std::string_view s) { update(s.data(), s.size()); }
  // Finishes the hash and returns it as 64 lowercase hex digits. Call once.
  std::string hex_digest();

  // One-shot helpers.
  static std::string hex(std::string_view data);
  // Hashes a file's contents; throws std::runtime_error if it cannot be read.
  static std::string hex_file(const std::string& path);

 private:
  struct Ctx;
  std::unique_ptr<Ctx> ctx_;
};

// Whether `s` has the form of a hex_digest(): 64 lowercase hex digits.
bool is_sha256_hex(std::string_view s);

// XXH3 64-bit hash of a byte range (seed 0).
uint64_t xxh3_64(const void* data, size_t len);

}  // namespace servelab::store
