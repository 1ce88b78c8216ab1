// The checks of a preprocessing spec (see preprocess.h); no OpenCV, so core-only builds
// (SERVELAB_CORE_ONLY) validate specs too.
#include <cmath>
#include <string>

#include "engine/runtime/preprocess.h"

namespace servelab::runtime {

void validate_preprocess(const Preprocess& pp) {
  constexpr int kMaxSide = 1024;  // also the bound of `resize` (see register_request.h)
  if (pp.input_width <= 0 || pp.input_height <= 0 || pp.input_width > kMaxSide ||
      pp.input_height > kMaxSide)
    throw ImageError("input size must be between 1 and 1024 pixels, got " +
                     std::to_string(pp.input_width) + "x" + std::to_string(pp.input_height));
  if (pp.resize > kMaxSide)
    throw ImageError("resize must be at most 1024 pixels, got " + std::to_string(pp.resize));
  for (int c = 0; c < 3; ++c)
    if (!(std::isnormal(pp.std[c]) && pp.std[c] >= 1e-6f) || !std::isfinite(pp.mean[c]))
      throw ImageError("normalization std must be at least 1e-6 and mean finite");
}

}  // namespace servelab::runtime
