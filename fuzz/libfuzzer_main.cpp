// The libFuzzer entry of one target; SERVELAB_FUZZ_ENTRY names it (see fuzz/CMakeLists.txt).
#include "fuzz/targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return servelab::fuzz::SERVELAB_FUZZ_ENTRY(data, size);
}
