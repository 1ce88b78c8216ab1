// SHA-256 (FIPS 180-4), a small in-tree implementation used to checksum model files in the
// store. Value type; one instance per stream; not thread-safe.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace servelab::server {

class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t len);
  void update(std::string_view s) { update(s.data(), s.size()); }
  // Finishes the hash and returns it as 64 lowercase hex digits. Call once.
  std::string hex_digest();

  // One-shot helpers.
  static std::string hex(std::string_view data);
  // Hashes a file's contents; throws std::runtime_error if it cannot be read.
  static std::string hex_file(const std::string& path);

 private:
  void block(const uint8_t* p);
  std::array<uint32_t, 8> h_;
  std::array<uint8_t, 64> buf_{};
  size_t buf_len_ = 0;
  uint64_t total_ = 0;
};

}  // namespace servelab::server
