// A json document type whose nodes come from a per-thread arena, for request bodies parsed
// once and thrown away (the v2 infer header of every request). The std::allocator json made
// ~35 allocations for a 110-byte header; from the arena nodes cost a pointer bump.
//
// Use: open a ParseArena::Scope, then parse into ArenaJson values that all die inside the
// scope (declare the Scope first). Leaving the scope releases the arena; what grew past its
// first block (a large JSON body) goes back to the system then, so memory stays bounded by
// the largest body in flight on the thread, as with std::allocator.
// Thread-safety: the arena is thread-local; Scopes nest (only the outermost releases).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory_resource>
#include <nlohmann/json.hpp>

namespace servelab::server {

class ParseArena {
 public:
  class Scope {
   public:
    Scope() { ++state().depth; }
    ~Scope() {
      if (--state().depth == 0) state().resource.release();
    }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
  };

  static std::pmr::memory_resource* resource() { return &state().resource; }

 private:
  static constexpr size_t kFirstBlock = 16 * 1024;  // thread-local, reused by every parse

  struct State {
    alignas(std::max_align_t) std::byte first[kFirstBlock];
    std::pmr::monotonic_buffer_resource resource{first, kFirstBlock,
                                                 std::pmr::new_delete_resource()};
    int depth = 0;
  };
  static State& state() {
    thread_local State s;
    return s;
  }
};

// A stateless allocator over the thread's ParseArena (what nlohmann's AllocatorType takes).
// Deallocation is a no-op: the Scope's end frees everything at once.
template <class T>
struct ArenaAllocator {
  using value_type = T;
  ArenaAllocator() noexcept = default;
  template <class U>
  ArenaAllocator(const ArenaAllocator<U>&) noexcept {}
  T* allocate(size_t n) {
    return static_cast<T*>(ParseArena::resource()->allocate(n * sizeof(T), alignof(T)));
  }
  void deallocate(T* p, size_t n) noexcept {
    ParseArena::resource()->deallocate(p, n * sizeof(T), alignof(T));
  }
  template <class U>
  bool operator==(const ArenaAllocator<U>&) const noexcept { return true; }
  template <class U>
  bool operator!=(const ArenaAllocator<U>&) const noexcept { return false; }
};

// nlohmann::json with its objects, arrays and strings' nodes in the arena (the bytes of a
// string longer than the small-string buffer still come from std::allocator).
using ArenaJson = nlohmann::basic_json<std::map, std::vector, std::string, bool, std::int64_t,
                                       std::uint64_t, double, ArenaAllocator>;

}  // namespace servelab::server
