#include "tests/integration/server/test_images.h"

#include <algorithm>

namespace servelab::testing {
namespace {

void put32(std::string& s, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) s += char((v >> shift) & 0xff);
}

uint32_t crc32(const std::string& data) {
  uint32_t c = 0xffffffffu;
  for (unsigned char b : data) {
    c ^= b;
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1u)));
  }
  return c ^ 0xffffffffu;
}

void chunk(std::string& png, const std::string& type, const std::string& data) {
  put32(png, uint32_t(data.size()));
  std::string body = type + data;
  png += body;
  put32(png, crc32(body));
}

// zlib stream of `raw` in stored (uncompressed) deflate blocks.
std::string zlib_stored(const std::string& raw) {
  std::string z = "\x78\x01";
  size_t pos = 0;
  do {
    size_t n = std::min<size_t>(65535, raw.size() - pos);
    bool last = pos + n == raw.size();
    z += char(last ? 1 : 0);
    z += char(n & 0xff);
    z += char(n >> 8);
    z += char(~n & 0xff);
    z += char((~n >> 8) & 0xff);
    z += raw.substr(pos, n);
    pos += n;
  } while (pos < raw.size());
  uint32_t a = 1, b = 0;
  for (unsigned char c : raw) {
    a = (a + c) % 65521;
    b = (b + a) % 65521;
  }
  put32(z, (b << 16) | a);
  return z;
}

}  // namespace

std::string png_gray(uint32_t width, uint32_t height) {
  std::string png = "\x89PNG\r\n\x1a\n";
  std::string ihdr;
  put32(ihdr, width);
  put32(ihdr, height);
  ihdr += std::string("\x08\x00\x00\x00\x00", 5);  // 8-bit gray, deflate, no filter, no interlace
  chunk(png, "IHDR", ihdr);
  std::string raw;
  for (uint32_t y = 0; y < height; ++y) raw += '\0' + std::string(width, '\x80');
  chunk(png, "IDAT", zlib_stored(raw));
  chunk(png, "IEND", "");
  return png;
}

std::string jpeg_header(uint32_t width, uint32_t height) {
  std::string j = "\xff\xd8";                                     // SOI
  j += std::string("\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00", 18);  // APP0
  j += std::string("\xff\xc0\x00\x0b\x08", 5);                     // SOF0, 8-bit
  j += char(height >> 8);
  j += char(height & 0xff);
  j += char(width >> 8);
  j += char(width & 0xff);
  j += std::string("\x01\x01\x11\x00", 4);                         // one component
  return j;
}

}  // namespace servelab::testing
