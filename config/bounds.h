// The ranges of the engine settings that a config file and `servelab serve`'s options both set:
// one table, so that a value is refused alike wherever it comes from (engine_yaml.cpp with the
// file, line and key; serve_main.cpp with the option). Upper bounds keep a typo
// (workers: 1000000000) from asking for memory or time that no run has. Header-only: serve
// reads it also when built without the config library.
#pragma once

#include <cstdint>

namespace servelab::config {

template <class T>
struct Range {
  T lo;
  T hi;
  bool holds(T v) const { return v >= lo && v <= hi; }  // false for NaN
};

inline constexpr Range<uint32_t> kWorkers{1, 4096};
inline constexpr Range<uint32_t> kMaxBatch{1, 65536};
inline constexpr Range<uint32_t> kContexts{1, 1024};
inline constexpr Range<uint32_t> kQueueBound{0, 100'000'000};
inline constexpr Range<uint32_t> kLoadsInFlight{1, 1024};
inline constexpr Range<uint32_t> kIoThreads{1, 4096};
inline constexpr Range<double> kQuantumMs{0, 3.6e6};             // up to one hour
inline constexpr Range<uint64_t> kModelCount{1, 100'000};         // models: {count: N}
inline constexpr Range<double> kRequestTimeoutMs{1e-3, 86.4e6};  // 1 us to one day, or none

}  // namespace servelab::config
