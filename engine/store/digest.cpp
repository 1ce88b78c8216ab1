#include "engine/store/digest.h"

#include <openssl/evp.h>
#include <xxhash.h>

#include <fstream>
#include <stdexcept>
#include <vector>

namespace servelab::store {

struct Sha256::Ctx {
  EVP_MD_CTX* md = EVP_MD_CTX_new();
  ~Ctx() { EVP_MD_CTX_free(md); }
};

Sha256::Sha256() : ctx_(std::make_unique<Ctx>()) {
  if (!ctx_->md || EVP_DigestInit_ex(ctx_->md, EVP_sha256(), nullptr) != 1)
    throw std::runtime_error("libcrypto cannot start a SHA-256 digest");
}

Sha256::~Sha256() = default;

void Sha256::update(const void* data, size_t len) {
  if (len && EVP_DigestUpdate(ctx_->md, data, len) != 1)
    throw std::runtime_error("libcrypto SHA-256 update failed");
}

std::string Sha256::hex_digest() {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  if (EVP_DigestFinal_ex(ctx_->md, out, &n) != 1)
    throw std::runtime_error("libcrypto SHA-256 final failed");
  static const char* kHex = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * n);
  for (unsigned int i = 0; i < n; ++i) {
    hex += kHex[out[i] >> 4];
    hex += kHex[out[i] & 0xf];
  }
  return hex;
}

std::string Sha256::hex(std::string_view data) {
  Sha256 s;
  s.update(data);
  return s.hex_digest();
}

std::string Sha256::hex_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read '" + path + "'");
  Sha256 s;
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), std::streamsize(buf.size()));
    s.update(buf.data(), size_t(in.gcount()));
  }
  if (in.bad()) throw std::runtime_error("error reading '" + path + "'");
  return s.hex_digest();
}

uint64_t xxh3_64(const void* data, size_t len) { return XXH3_64bits(data, len); }

bool is_sha256_hex(std::string_view s) {
  if (s.size() != 64) return false;
  for (const char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

}  // namespace servelab::store
