// Image preprocessing (OpenCV, preprocess.cpp is the only file that includes it): decode
// JPEG/PNG bytes, resize the shorter side, center-crop to the model's input size, BGR -> RGB,
// then either normalize on the CPU ((x/255 - mean) / std, CHW float) or keep the uint8 RGB
// crop for normalization on the device. Pure functions; safe to call from any thread.
#pragma once

#include <stdexcept>
#include <string>

#include "engine/runtime/engine.h"
#include "engine/runtime/executor.h"

namespace servelab::runtime {

// Thrown for bytes that are not a decodable image, or a bad preprocessing spec; message is
// user-facing (the server answers 400).
struct ImageError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// Decodes and prepares one image. `normalize`: true fills Input::chw (normalized float),
// false fills Input::hwc (uint8 RGB crop). Grayscale and RGBA images become RGB.
Input preprocess_image(const std::string& bytes, const Preprocess& pp, bool normalize = true);

// Readies the image decoders (OpenCV's codecs and what they load and set up on first use,
// GDAL's drivers among them) by decoding a tiny JPEG and PNG, so that processes forked after
// it share what that built and no first request pays it. Starts no thread.
void warm_image_decoders();

// Checks a preprocessing spec (input sides 1..1024, resize <= 1024, std >= 1e-6, finite
// mean); throws ImageError.
void validate_preprocess(const Preprocess& pp);

}  // namespace servelab::runtime
