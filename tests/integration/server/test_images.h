// Hand-built image bytes for the image-guard tests: valid PNGs of any size (stored deflate
// blocks, no zlib needed) and JPEG headers with chosen frame sizes.
#pragma once

#include <cstdint>
#include <string>

namespace servelab::testing {

// A decodable 8-bit grayscale PNG of width x height pixels (all mid-gray).
std::string png_gray(uint32_t width, uint32_t height);

// JPEG bytes up to and including a baseline frame header (SOF0) of width x height; enough
// for a header reader, not for a decoder.
std::string jpeg_header(uint32_t width, uint32_t height);

}  // namespace servelab::testing
