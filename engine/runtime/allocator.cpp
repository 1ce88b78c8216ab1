#include "engine/runtime/allocator.h"

#include <cstdlib>
#include <cstring>
#include <mutex>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace servelab::runtime {

namespace {

constexpr int kKeepBytes = 2000000000;  // ~2 GB: larger than any activation buffer we serve

bool user_chose() {
  const char* mode = std::getenv("SERVELAB_MALLOC");
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  return std::getenv("MALLOC_MMAP_THRESHOLD_") || std::getenv("MALLOC_TRIM_THRESHOLD_") ||
         std::getenv("MALLOC_ARENA_MAX") || (tunables && std::strstr(tunables, "glibc.malloc.")) ||
         (mode && std::strcmp(mode, "default") == 0);
}

const char* apply() {
  if (user_chose()) return "glibc malloc: as the environment sets it";
#if defined(__GLIBC__)
  if (mallopt(M_MMAP_THRESHOLD, kKeepBytes) == 1 && mallopt(M_TRIM_THRESHOLD, kKeepBytes) == 1 &&
      mallopt(M_ARENA_MAX, 1) == 1)
    return "glibc malloc: freed memory kept, one arena (mmap and trim thresholds 2e9, arena_max 1)";
  return "glibc malloc: defaults (mallopt refused the thresholds)";
#else
  return "allocator: the platform's default";
#endif
}

}  // namespace

const char* keep_freed_memory() {
  static std::once_flag once;
  static const char* regime = nullptr;
  std::call_once(once, [] { regime = apply(); });
  return regime;
}

void give_back_freed_memory() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

namespace {
// Before main, so before any thread has an arena of its own (it would keep it).
[[maybe_unused]] const char* const kRegimeAtStart = keep_freed_memory();
}  // namespace

}  // namespace servelab::runtime
