#include "experiments/profiler.h"

#include <ATen/Parallel.h>
#include <torch/script.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <nlohmann/json.hpp>


namespace servelab::experiments {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

void mean_stddev(const std::vector<double>& v, double* mean, double* sd) {
  double m = 0;
  for (double x : v) m += x;
  m /= static_cast<double>(v.size());
  double var = 0;
  for (double x : v) var += (x - m) * (x - m);
  *mean = m;
  *sd = v.size() > 1 ? std::sqrt(var / static_cast<double>(v.size() - 1)) : 0;
}

// Input size from the manifest written by scripts/make-models (224x224 when absent).
std::pair<int, int> input_size(const std::string& manifest) {
  std::ifstream in(manifest);
  if (!in) return {224, 224};
  auto j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded()) throw std::runtime_error("profile: cannot parse " + manifest);
  return {j.value("input_height", 224), j.value("input_width", 224)};
}

torch::jit::Module load_module(const std::string& file) {
  try {
    auto m = torch::jit::load(file, torch::kCPU);
    m.eval();
    return m;
  } catch (const c10::Error& e) {
    throw std::runtime_error("profile: cannot load TorchScript file '" + file +
                             "': " + e.what_without_backtrace());
  }
}

ModelProfile measure_model(const ProfileOptions& o, const std::string& name,
                           const std::function<void(const std::string&)>& log) {
  namespace fs = std::filesystem;
  std::string file = (fs::path(o.models_dir) / (name + ".pt")).string();
  if (!fs::exists(file))
    throw std::runtime_error("profile: no model file " + file +
                             " (export models with scripts/make-models)");
  auto [h, w] = input_size((fs::path(o.models_dir) / (name + ".json")).string());
  ModelProfile p;
  p.name = name;
  std::vector<double> loads;
  torch::jit::Module module;
  for (uint32_t i = 0; i < std::max(1u, o.load_samples); ++i) {
    auto t0 = Clock::now();
    module = load_module(file);
    loads.push_back(seconds_since(t0));
  }
  double load_mean, load_sd;
  mean_stddev(loads, &load_mean, &load_sd);
  p.set_load_time(Tier::Disk, Tier::Host, load_mean);
  uint64_t bytes = 0;
  for (const auto& t : module.parameters()) bytes += t.numel() * t.element_size();
  for (const auto& t : module.buffers()) bytes += t.numel() * t.element_size();
  p.size_bytes = bytes;
  if (log) log(name + ": " + std::to_string(bytes / 1024) + " KiB, disk->host load " +
               std::to_string(load_mean * 1e3) + " ms");
  torch::NoGradGuard no_grad;
  for (uint32_t b : o.batch_sizes) {
    auto input = torch::rand({static_cast<long>(b), 3, h, w});
    std::vector<torch::jit::IValue> args{input};
    for (uint32_t i = 0; i < o.warmup; ++i) module.forward(args);
    BatchCost c;
    c.batch = b;
    auto start = Clock::now();
    for (uint32_t i = 0; i < o.samples; ++i) {
      auto t0 = Clock::now();
      module.forward(args);
      c.samples.push_back(seconds_since(t0));
      if (seconds_since(start) > o.max_seconds_per_size && c.samples.size() >= 3) break;
    }
    mean_stddev(c.samples, &c.mean, &c.stddev);
    if (log) log(name + ": batch " + std::to_string(b) + " " + std::to_string(c.mean * 1e3) +
                 " ms (sd " + std::to_string(c.stddev * 1e3) + ", n=" +
                 std::to_string(c.samples.size()) + ")");
    p.batches.push_back(std::move(c));
  }
  p.validate();
  return p;
}

}  // namespace

CostProfile measure_profile(const ProfileOptions& o,
                            const std::function<void(const std::string&)>& log) {
  if (o.models.empty()) throw std::runtime_error("profile: no models to measure");
  if (o.batch_sizes.empty()) throw std::runtime_error("profile: no batch sizes");
  at::set_num_threads(std::max(1, o.threads));
  CostProfile profile;
  for (const auto& name : o.models) profile.models.push_back(measure_model(o, name, log));
  return profile;
}

}  // namespace servelab::experiments
