// The engine's allocator regime (engine/runtime/allocator.h), checked against glibc's own
// accounting: after keep_freed_memory(), a block of megabytes comes from the heap (not from
// mmap) and stays there when freed, as LibTorch's activation buffers must.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#if defined(__GLIBC__)
#include <malloc.h>
#include <unistd.h>
#endif

#include "engine/runtime/allocator.h"

namespace {

// The regime in force, where there is one of the engine's to check: not where the environment
// chose the allocator's settings or a sanitizer's allocator replaces glibc's.
bool engine_regime(std::string* regime) {
  if (std::getenv("MALLOC_MMAP_THRESHOLD_") || std::getenv("SERVELAB_MALLOC") ||
      std::getenv("MALLOC_ARENA_MAX") || std::getenv("GLIBC_TUNABLES")) {
    WARN("allocator chosen by the environment; nothing to check");
    return false;
  }
  *regime = servelab::runtime::keep_freed_memory();
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
  WARN("a sanitizer's allocator replaces glibc's: nothing to check (" << *regime << ")");
  return false;
#elif defined(__GLIBC__)
  return true;
#else
  return false;
#endif
}

}  // namespace

TEST_CASE("the engine keeps freed memory: large blocks come from the heap", "[runtime]") {
  std::string regime;
  if (!engine_regime(&regime)) return;
#if defined(__GLIBC__)
  CHECK(regime.find("freed memory kept") != std::string::npos);
  const size_t mapped_before = mallinfo2().hblkhd;  // bytes in mmap'd blocks
  constexpr size_t kBlock = 24u << 20;                // 24 MiB, above glibc's default ceiling
  void* p = std::malloc(kBlock);
  REQUIRE(p != nullptr);
  std::memset(p, 1, kBlock);
  CHECK(mallinfo2().hblkhd == mapped_before);  // by default glibc would mmap it
  std::free(p);
  CHECK(mallinfo2().fordblks >= kBlock);  // kept as free heap, not returned to the system
#endif
}

TEST_CASE("the engine keeps freed memory on every thread: one arena", "[runtime]") {
  std::string regime;
  if (!engine_regime(&regime)) return;
#if defined(__GLIBC__)
  CHECK(regime.find("one arena") != std::string::npos);
  // A worker thread's batch buffers: above the 64 MiB a thread's own arena can hold, so with
  // an arena per thread glibc would mmap the block (far above the program break) and unmap it
  // when freed, however high the threshold.
  constexpr size_t kBlock = 96u << 20;
  bool allocated = false, in_heap = false;
  std::thread worker([&] {  // no Catch assertions off the test's thread
    char* p = static_cast<char*>(std::malloc(kBlock));
    if (!p) return;
    allocated = true;
    std::memset(p, 1, kBlock);
    in_heap = p + kBlock <= static_cast<char*>(sbrk(0));  // the main arena's heap
    std::free(p);
  });
  worker.join();
  REQUIRE(allocated);
  CHECK(in_heap);
  CHECK(mallinfo2().fordblks >= kBlock);  // kept as free heap
#endif
}
