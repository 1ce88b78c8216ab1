#include "engine/control/load_sources.h"

namespace servelab {

namespace {
constexpr std::array<const char*, kLoadSourceCount> kNames = {"file", "file-cold", "store",
                                                              "store-cold", "store-sibling"};
}  // namespace

const char* load_source_name(LoadSource s) { return kNames[static_cast<size_t>(s)]; }

bool parse_load_source(const std::string& s, LoadSource* out) {
  for (size_t i = 0; i < kNames.size(); ++i) {
    if (s == kNames[i]) {
      *out = LoadSource(i);
      return true;
    }
  }
  return false;
}

}  // namespace servelab
