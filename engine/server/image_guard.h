// Bounds an image's decode cost before it is decoded. The dimensions come from the header
// (PNG IHDR, JPEG SOFn); OpenCV cannot be asked cheaply and a 99-byte PNG can claim 20000x1,
// which the resize then turns into gigabytes. Formats whose header is not read here are
// refused rather than decoded unbounded. Pure functions; thread-safe; nothing is allocated
// for the image (only the error message).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace servelab::server {

// Limits on a classify body (defaults documented in `servelab serve --help`).
struct ImageLimits {
  size_t max_bytes = 16u << 20;       // encoded size
  uint64_t max_pixels = 40'000'000;   // width x height
  uint32_t max_side = 12'000;         // width and height each
  double max_aspect = 20;             // longer side / shorter side
};

enum class ImageFormat { Unknown, Png, Jpeg };

struct ImageHeader {
  ImageFormat format = ImageFormat::Unknown;
  uint32_t width = 0;
  uint32_t height = 0;
};

// Reads the format and dimensions from `bytes`; false when the format is not PNG or JPEG,
// or its header is truncated or malformed (zero size, JPEG without a frame header).
bool read_image_header(std::string_view bytes, ImageHeader* out);

// Checks `bytes` against `limits`. Returns 0 when the image may be decoded, else the status
// to answer (413 over a limit, 400 unreadable or unsupported) with `*why` set to a message
// that names the limit. `why` may be null.
int check_image(std::string_view bytes, const ImageLimits& limits, std::string* why);

}  // namespace servelab::server
