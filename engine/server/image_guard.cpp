#include "engine/server/image_guard.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace servelab::server {
namespace {

uint32_t be16(const unsigned char* p) { return (uint32_t(p[0]) << 8) | p[1]; }
uint32_t be32(const unsigned char* p) {
  return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | p[3];
}

// PNG: 8-byte signature, then the IHDR chunk (length 13) with width and height first.
bool read_png(const unsigned char* p, size_t n, ImageHeader* out) {
  static const unsigned char kSig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (n < 24 || std::memcmp(p, kSig, 8) != 0) return false;
  if (be32(p + 8) != 13 || std::memcmp(p + 12, "IHDR", 4) != 0) return false;
  uint32_t w = be32(p + 16), h = be32(p + 20);
  if (w == 0 || h == 0 || w > 0x7fffffff || h > 0x7fffffff) return false;
  *out = ImageHeader{ImageFormat::Png, w, h};
  return true;
}

// SOF0..SOF15 except DHT (C4), JPG (C8) and DAC (CC) carry the frame size.
bool is_frame_marker(unsigned char m) {
  return m >= 0xc0 && m <= 0xcf && m != 0xc4 && m != 0xc8 && m != 0xcc;
}

// JPEG: walk the marker segments from SOI to the first frame header; stop at scan data.
bool read_jpeg(const unsigned char* p, size_t n, ImageHeader* out) {
  if (n < 4 || p[0] != 0xff || p[1] != 0xd8) return false;
  size_t i = 2;
  while (i + 4 <= n) {
    if (p[i] != 0xff) return false;
    unsigned char m = p[i + 1];
    if (m == 0xff) {  // fill byte
      ++i;
      continue;
    }
    if (m == 0x01 || (m >= 0xd0 && m <= 0xd7)) {  // standalone markers
      i += 2;
      continue;
    }
    if (m == 0xd8 || m == 0xd9 || m == 0xda) return false;  // no frame header before the scan
    size_t len = be16(p + i + 2);
    if (len < 2 || i + 2 + len > n) return false;
    if (is_frame_marker(m)) {
      if (len < 8) return false;
      uint32_t h = be16(p + i + 5), w = be16(p + i + 7);
      if (w == 0 || h == 0) return false;  // height from a DNL segment: cannot bound it here
      *out = ImageHeader{ImageFormat::Jpeg, w, h};
      return true;
    }
    i += 2 + len;
  }
  return false;
}

}  // namespace

bool read_image_header(std::string_view bytes, ImageHeader* out) {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  return read_png(p, bytes.size(), out) || read_jpeg(p, bytes.size(), out);
}

int check_image(std::string_view bytes, const ImageLimits& limits, std::string* why) {
  auto fail = [why](int status, std::string msg) {
    if (why) *why = std::move(msg);
    return status;
  };
  if (bytes.size() > limits.max_bytes) {
    return fail(413, "image of " + std::to_string(bytes.size()) + " bytes is over the limit of " +
                         std::to_string(limits.max_bytes) + " bytes");
  }
  ImageHeader h;
  if (!read_image_header(bytes, &h)) {
    return fail(400, "cannot read the image header: send PNG or JPEG bytes");
  }
  std::string size = std::to_string(h.width) + "x" + std::to_string(h.height);
  if (std::max(h.width, h.height) > limits.max_side) {
    return fail(413, "image is " + size + "; the limit is " + std::to_string(limits.max_side) +
                         " pixels a side");
  }
  if (uint64_t(h.width) * h.height > limits.max_pixels) {
    return fail(413, "image is " + size + "; the limit is " + std::to_string(limits.max_pixels) +
                         " pixels");
  }
  double aspect = double(std::max(h.width, h.height)) / std::min(h.width, h.height);
  if (aspect > limits.max_aspect) {
    char ratio[32];
    std::snprintf(ratio, sizeof ratio, "%g", limits.max_aspect);
    return fail(413, "image is " + size + "; the limit is an aspect ratio of " + ratio + ":1");
  }
  return 0;
}

}  // namespace servelab::server
