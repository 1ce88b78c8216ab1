// What the GPU checks share (tests/gpu): the CUDA device's state as LibTorch reports it, the
// exported models (scripts/make-models --gpu), request inputs and their CPU reference, and
// small statistics. Built only by scripts/gpu-check (SERVELAB_CORE_ONLY, CUDA LibTorch).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "common/clock.h"
#include "engine/runtime/engine.h"
#include "engine/runtime/executor.h"

namespace servelab::gpu {

bool cuda_ready();                // LibTorch sees a CUDA device
void cuda_sync();                 // waits for all work on the device
uint64_t cuda_allocated_bytes();  // the caching allocator's live bytes on device 0 (after a sync)
std::string torch_version();      // LibTorch's version string, e.g. "2.11.0"
// Whether cuDNN convolutions may use TF32 (LibTorch's default: yes). Process-wide.
void allow_tf32_convolutions(bool allow);

// Where the models are: $SERVELAB_MODELS_DIR, else "models" (scripts/make-models --gpu).
std::string models_dir();
// The spec of an exported model: tiny_cnn is 32x32 (resize 36), the torchvision models
// 224x224 (resize 256); ImageNet mean and std for all, as make-models writes them.
runtime::ModelSpec model_spec(const std::string& model, const std::string& name = "");

// A uint8 RGB crop (H x W x 3) of pseudo-random pixels: what preprocessing hands a CUDA
// executor. Distinct seeds give distinct images.
runtime::Input random_crop(int height, int width, uint64_t seed);
// The same image normalized on the CPU in plain C++ ((x / 255 - mean) / std, C x H x W):
// the reference the device's normalization is checked against.
runtime::Input normalized_on_cpu(const runtime::Input& crop, const runtime::Preprocess& pp);
// ||a - ref|| / ||ref|| over all rows (rows must match in count and width).
double relative_error(const std::vector<std::vector<float>>& a,
                      const std::vector<std::vector<float>>& ref);

// Statistics of timings in seconds.
double median(std::vector<double> v);
double mean(const std::vector<double>& v);
double stddev(const std::vector<double>& v);

// Seconds `f` takes, from an idle device until its work on the device is done.
template <class F>
double timed_on_device(F&& f) {
  cuda_sync();
  const auto t0 = std::chrono::steady_clock::now();
  f();
  cuda_sync();
  return seconds_since(t0);
}

}  // namespace servelab::gpu
