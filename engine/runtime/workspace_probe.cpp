// Counting wrapper around c10's CPU allocator (see workspace_probe.h).
#include "engine/runtime/workspace_probe.h"

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <torch/version.h>

#include <atomic>
#include <cstring>
#include <mutex>
#include <unordered_map>

namespace servelab::runtime {

struct WorkspaceProbe::Counter {
  std::atomic<int64_t> current{0};
  std::atomic<int64_t> peak{0};
  void add(int64_t n) {
    int64_t now = current.fetch_add(n) + n;
    int64_t p = peak.load();
    while (now > p && !peak.compare_exchange_weak(p, now)) {
    }
  }
};

namespace {

thread_local std::shared_ptr<WorkspaceProbe::Counter> tl_counter;

// LibTorch 2.3 made Allocator::allocate non-const and added the pure copy_data.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 3)
#define SERVELAB_ALLOCATE_CONST
#define SERVELAB_ALLOCATOR_COPY_DATA 1
#else
#define SERVELAB_ALLOCATE_CONST const
#define SERVELAB_ALLOCATOR_COPY_DATA 0
#endif

// Pointers allocated while a probe was active, with their size and counter. Allocation and
// free of counted pointers take this lock; other allocations never touch it.
struct Registry {
  std::mutex mu;
  std::unordered_map<void*, std::pair<int64_t, std::shared_ptr<WorkspaceProbe::Counter>>> live;
};
Registry& registry() {
  static auto* r = new Registry;  // leaked: deleters may run during static destruction
  return *r;
}

c10::DeleterFnPtr g_base_deleter = nullptr;

void counted_delete(void* p) {
  {
    Registry& r = registry();
    std::lock_guard lock(r.mu);
    auto it = r.live.find(p);
    if (it != r.live.end()) {
      it->second.second->current.fetch_sub(it->second.first);
      r.live.erase(it);
    }
  }
  g_base_deleter(p);
}

class CountingAllocator final : public c10::Allocator {
 public:
  explicit CountingAllocator(c10::Allocator* base) : base_(base) {}
  c10::DataPtr allocate(size_t n) SERVELAB_ALLOCATE_CONST override {
    c10::DataPtr d = base_->allocate(n);
    const auto& counter = tl_counter;
    if (!counter || d.get() == nullptr || d.get() != d.get_context()) return d;
    void* p = d.release_context();
    counter->add(static_cast<int64_t>(n));
    {
      Registry& r = registry();
      std::lock_guard lock(r.mu);
      r.live[p] = {static_cast<int64_t>(n), counter};
    }
    return c10::DataPtr(p, p, &counted_delete, c10::Device(c10::DeviceType::CPU));
  }
  c10::DeleterFnPtr raw_deleter() const override { return &counted_delete; }
#if SERVELAB_ALLOCATOR_COPY_DATA
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    std::memcpy(dest, src, count);
  }
#endif

 private:
  c10::Allocator* base_;
};

// Installs the wrapper once. Returns false when the base allocator cannot be wrapped
// (no raw deleter: its pointers are not self-describing).
bool install() {
  static bool ok = [] {
    c10::Allocator* base = c10::GetCPUAllocator();
    if (base == nullptr || base->raw_deleter() == nullptr) return false;
    g_base_deleter = base->raw_deleter();
    static auto* wrapper = new CountingAllocator(base);
    c10::SetCPUAllocator(wrapper, /*priority=*/100);
    return c10::GetCPUAllocator() == wrapper;
  }();
  return ok;
}

}  // namespace

WorkspaceProbe::WorkspaceProbe() : counter_(std::make_shared<Counter>()) {
  if (install()) tl_counter = counter_;
}
WorkspaceProbe::~WorkspaceProbe() { tl_counter.reset(); }
uint64_t WorkspaceProbe::peak_bytes() const { return static_cast<uint64_t>(counter_->peak.load()); }
uint64_t WorkspaceProbe::current_bytes() const {
  return static_cast<uint64_t>(std::max<int64_t>(counter_->current.load(), 0));
}

}  // namespace servelab::runtime
