// LibTorch and CUDA allocator queries for the GPU checks (see gpu_env.h). The CUDA headers
// exist only where a CUDA toolkit is installed: without them (a CPU LibTorch, where this file
// is only compiled to check it) the allocator queries throw.
#include "tests/gpu/gpu_env.h"

#include <ATen/Context.h>
#include <torch/cuda.h>
#include <torch/version.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <numeric>
#include <random>
#include <stdexcept>

#if __has_include(<cuda_runtime_api.h>)
#include <c10/cuda/CUDACachingAllocator.h>
#define SERVELAB_GPU_ALLOCATOR 1
#else
#define SERVELAB_GPU_ALLOCATOR 0
#endif

namespace servelab::gpu {

bool cuda_ready() { return torch::cuda::is_available(); }

void cuda_sync() { torch::cuda::synchronize(); }

#if SERVELAB_GPU_ALLOCATOR
namespace alloc = c10::cuda::CUDACachingAllocator;
uint64_t cuda_allocated_bytes() {
  cuda_sync();
  return static_cast<uint64_t>(alloc::getDeviceStats(0).allocated_bytes[0].current);
}
#else
[[noreturn]] static void no_cuda() {
  throw std::runtime_error("built without the CUDA headers: no CUDA allocator to ask");
}
uint64_t cuda_allocated_bytes() { no_cuda(); }
#endif

std::string torch_version() { return TORCH_VERSION; }

void allow_tf32_convolutions(bool allow) { at::globalContext().setAllowTF32CuDNN(allow); }

std::string models_dir() {
  const char* dir = std::getenv("SERVELAB_MODELS_DIR");
  return dir && *dir ? dir : "models";
}

runtime::ModelSpec model_spec(const std::string& model, const std::string& name) {
  runtime::ModelSpec spec;
  spec.name = name.empty() ? model : name;
  spec.file = models_dir() + "/" + model + ".pt";
  if (!std::filesystem::exists(spec.file))
    throw std::runtime_error("missing " + spec.file + " (run: bash scripts/make-models --gpu)");
  const bool tiny = model == "tiny_cnn";
  spec.preprocess.input_width = spec.preprocess.input_height = tiny ? 32 : 224;
  spec.preprocess.resize = tiny ? 36 : 256;
  return spec;
}

runtime::Input random_crop(int height, int width, uint64_t seed) {
  runtime::Input in;
  in.channels = 3;
  in.height = height;
  in.width = width;
  in.hwc.resize(static_cast<size_t>(height) * width * 3);
  std::mt19937_64 rng(seed);
  for (auto& px : in.hwc) px = static_cast<uint8_t>(rng() >> 56);
  return in;
}

runtime::Input normalized_on_cpu(const runtime::Input& crop, const runtime::Preprocess& pp) {
  runtime::Input out;
  out.channels = 3;
  out.height = crop.height;
  out.width = crop.width;
  const size_t plane = static_cast<size_t>(crop.height) * crop.width;
  out.chw.resize(3 * plane);
  for (size_t i = 0; i < plane; ++i)
    for (int c = 0; c < 3; ++c)
      out.chw[c * plane + i] = (crop.hwc[i * 3 + c] / 255.0f - pp.mean[c]) / pp.std[c];
  return out;
}

double relative_error(const std::vector<std::vector<float>>& a,
                      const std::vector<std::vector<float>>& ref) {
  if (a.size() != ref.size()) throw std::runtime_error("row counts differ");
  double diff = 0, norm = 0;
  for (size_t r = 0; r < a.size(); ++r) {
    if (a[r].size() != ref[r].size()) throw std::runtime_error("row widths differ");
    for (size_t i = 0; i < a[r].size(); ++i) {
      const double d = static_cast<double>(a[r][i]) - ref[r][i];
      diff += d * d;
      norm += static_cast<double>(ref[r][i]) * ref[r][i];
    }
  }
  return norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double mean(const std::vector<double>& v) {
  return v.empty() ? 0 : std::accumulate(v.begin(), v.end(), 0.0) / v.size();
}

double stddev(const std::vector<double>& v) {
  if (v.size() < 2) return 0;
  const double m = mean(v);
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return std::sqrt(s / (v.size() - 1));
}

}  // namespace servelab::gpu
