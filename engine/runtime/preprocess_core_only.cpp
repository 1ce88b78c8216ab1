// Image decoding in a core-only build (SERVELAB_CORE_ONLY: LibTorch alone, no OpenCV):
// every image is refused with a message that says why. Tensor requests (Engine::infer,
// submit_raw) need no decoding and work as in the full build.
#include "engine/runtime/preprocess.h"

namespace servelab::runtime {

Input preprocess_image(const std::string&, const Preprocess&, bool) {
  throw ImageError("this engine cannot decode images: it was built with SERVELAB_CORE_ONLY "
                   "(LibTorch alone, without OpenCV); send tensors instead");
}

void warm_image_decoders() {}  // nothing to decode with

}  // namespace servelab::runtime
