// Where a model's Disk -> Host load reads it from, and what such a load costs, phase by phase
// (TrIMS section 6 and figure 9, PRETZEL figure 3): the model's TorchScript file or a weight
// store's skeleton and blobs, each with its bytes in the page cache or not. The profiler
// measures each source (calibration/load_sources.h); simulation.load_source picks the one a
// simulated run's loads come from. Plain data; seconds.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

namespace servelab {

enum class LoadSource : uint8_t {
  File = 0,   // the TorchScript file, in the page cache (a server's steady state)
  FileCold,   // the TorchScript file read from the disk
  Store,      // through the weight store, its blobs resident (another process maps them)
  StoreCold,  // through the weight store, its blobs read from the disk
  // Through the weight store while another model of its architecture is loaded: its module
  // copied from that one's, not imported (PRETZEL's variants of one backbone).
  StoreSibling,
};
inline constexpr int kLoadSourceCount = 5;
// "file" | "file-cold" | "store" | "store-cold" | "store-sibling"
const char* load_source_name(LoadSource s);
bool parse_load_source(const std::string& s, LoadSource* out);

// One load's phases, as the engine's answers split them (engine/runtime/load_parts.h), and
// what the first batch on the freshly loaded module costs beyond a warm one.
struct LoadCost {
  double read = 0;
  double deserialize = 0;
  double copy = 0;
  double share = 0;
  double first_batch = 0;
  double total() const { return read + deserialize + copy + share + first_batch; }
  void scale(double k) {
    read *= k;
    deserialize *= k;
    copy *= k;
    share *= k;
    first_batch *= k;
  }
};

using LoadSources = std::array<std::optional<LoadCost>, kLoadSourceCount>;

}  // namespace servelab
