// The GPU's clocks and the reasons the driver gives for holding them down, as NVML reports
// them, for the cost profile (bench_gpu_profile.cpp): both GPU reports caught a batch size
// that ran twice as slow for a few samples (the H200's alexnet batch of 128, the H100's batch
// of 1) with nothing recorded to say why. libnvidia-ml ships with the driver; it is loaded at
// run time, so the build needs neither its header nor its library, and where it is missing
// read() gives nothing. Device index 0 (the machines are single-GPU). Header-only: the
// direct build (scripts/gpu-build) links the bench's own objects.
#pragma once

#include <dlfcn.h>

#include <optional>

namespace servelab::gpu {

struct GpuClocks {
  unsigned sm_mhz = 0, mem_mhz = 0;
  unsigned long long reasons = 0;  // nvmlClocksEventReasons bits (0x1 idle, 0x4 power cap,
                                   // 0x8 hardware slowdown, 0x20/0x40 thermal, ...)
};

class GpuClockReader {
 public:
  GpuClockReader() {
    lib_ = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib_) return;
    auto init = symbol<int (*)()>("nvmlInit_v2");
    auto handle = symbol<int (*)(unsigned, void**)>("nvmlDeviceGetHandleByIndex_v2");
    clock_ = symbol<int (*)(void*, int, unsigned*)>("nvmlDeviceGetClockInfo");
    reasons_ = symbol<int (*)(void*, unsigned long long*)>("nvmlDeviceGetCurrentClocksEventReasons");
    if (!reasons_)  // the older name of the same call
      reasons_ = symbol<int (*)(void*, unsigned long long*)>(
          "nvmlDeviceGetCurrentClocksThrottleReasons");
    if (!init || !handle || !clock_ || init() != 0) {
      clock_ = nullptr;
      return;
    }
    initialized_ = true;
    if (handle(0, &device_) != 0) clock_ = nullptr;
  }
  ~GpuClockReader() {
    if (initialized_)
      if (auto shutdown = symbol<int (*)()>("nvmlShutdown")) shutdown();
    if (lib_) dlclose(lib_);
  }
  GpuClockReader(const GpuClockReader&) = delete;
  GpuClockReader& operator=(const GpuClockReader&) = delete;

  // The clocks now; nothing where NVML is missing or answers with an error.
  std::optional<GpuClocks> read() const {
    constexpr int kClockSm = 1, kClockMem = 2;  // nvmlClockType_t
    GpuClocks c;
    if (!clock_ || clock_(device_, kClockSm, &c.sm_mhz) != 0 ||
        clock_(device_, kClockMem, &c.mem_mhz) != 0)
      return std::nullopt;
    if (reasons_ && reasons_(device_, &c.reasons) != 0) c.reasons = 0;
    return c;
  }

 private:
  template <class F>
  F symbol(const char* name) const {
    return lib_ ? reinterpret_cast<F>(dlsym(lib_, name)) : nullptr;
  }

  void* lib_ = nullptr;
  void* device_ = nullptr;
  bool initialized_ = false;
  int (*clock_)(void*, int, unsigned*) = nullptr;
  int (*reasons_)(void*, unsigned long long*) = nullptr;
};

}  // namespace servelab::gpu
