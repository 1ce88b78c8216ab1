// P5c: the GPU cost profile, in the format the simulator reads (config/profile_yaml.h): per
// model, the executor's batch latency by batch size (TorchExecutor::run from host uint8
// crops to host logits, as the engine's workers call it; LibTorch's default math, TF32
// convolutions), its disk -> host load (read, deserialize, pin) and host -> device load
// (synchronized), the bytes the device holds (parameters and buffers), and the engine's own
// cost per request around the batch: an in-process client's round trip at concurrency 1
// (batching none) less the batch, written as request_overhead_ms.after. After each timed
// batch the GPU's SM clock and the driver's clock-event reasons are read (gpu_clocks.h): the
// records give each size's clock range and reasons, to tell a slow stretch of the GPU's from
// one of the host's.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <future>
#include <fstream>
#include <sstream>

#include "tests/gpu/bench_gpu.h"
#include "tests/gpu/gpu_clocks.h"
#include "tests/gpu/gpu_env.h"

namespace servelab::gpu {
namespace {

using runtime::Input;

constexpr int kBatchSamples = 15;
constexpr int kLoadSamples = 5;

struct ModelProfile {
  std::string name;
  uint64_t bytes = 0;
  std::vector<std::pair<uint32_t, std::vector<double>>> batches;  // size, samples (s)
  std::vector<double> disk_host, host_device;                     // samples (s)
  double overhead = 0;  // the engine's round trip at concurrency 1 less the batch (s)
  // Per batch size (same order as batches): the SM clock after each timed sample (MHz) and
  // the clock-event reasons seen, OR'd; empty where NVML gave nothing.
  std::vector<std::vector<unsigned>> sm_mhz;
  std::vector<unsigned long long> reasons;
};

// Mean round trip (s) of `n` requests sent one at a time to an in-process engine on the GPU
// (batching none), after 10 warm-ups.
double engine_round_trip(const runtime::ModelSpec& spec, const Input& crop, int n) {
  runtime::EngineOptions eo;
  eo.device = "cuda";
  runtime::Engine engine(eo);
  engine.register_model(spec);
  auto input = std::make_shared<const Input>(crop);
  std::vector<double> rtt;
  for (int i = -10; i < n; ++i) {
    std::promise<bool> answered;
    const auto t0 = std::chrono::steady_clock::now();
    const int rc = engine.submit_together(spec.name, {input}, {runtime::RequestOptions{}}, 1,
        [&answered](size_t, runtime::ClassifyResult r) {
          answered.set_value(r.status == RequestStatus::Ok);
        });
    if (rc != 0 || !answered.get_future().get()) throw std::runtime_error("a request failed");
    if (i >= 0) rtt.push_back(seconds_since(t0));
  }
  return mean(rtt);
}

ModelProfile measure(const std::string& model, const std::vector<uint32_t>& sizes,
                     const GpuClockReader& clocks) {
  ModelProfile p;
  p.name = model;
  const runtime::ModelSpec spec = model_spec(model);
  auto exec = runtime::make_torch_executor("cuda", 1);
  p.bytes = exec->add(0, spec, sizes.back(), 1).param_bytes;
  for (int i = 0; i < kLoadSamples; ++i) {
    p.disk_host.push_back(timed_on_device([&] { exec->load(0, Tier::Disk, Tier::Host); }));
    p.host_device.push_back(timed_on_device([&] { exec->load(0, Tier::Host, Tier::Device); }));
    if (i + 1 < kLoadSamples) exec->evict(0, Tier::Device);
  }
  const int side = spec.preprocess.input_height;
  std::vector<Input> crops;
  for (uint32_t i = 0; i < sizes.back(); ++i) crops.push_back(random_crop(side, side, 50 + i));
  std::vector<std::vector<float>> out;
  for (uint32_t b : sizes) {
    std::vector<const Input*> ptrs;
    for (uint32_t i = 0; i < b; ++i) ptrs.push_back(&crops[i]);
    for (int w = 0; w < 3; ++w) exec->run(0, Tier::Device, ptrs, out);
    std::vector<double> samples;
    std::vector<unsigned> sm;
    unsigned long long reasons = 0;
    for (int i = 0; i < kBatchSamples; ++i) {
      samples.push_back(timed_on_device([&] { exec->run(0, Tier::Device, ptrs, out); }));
      if (const std::optional<GpuClocks> c = clocks.read()) {
        sm.push_back(c->sm_mhz);
        reasons |= c->reasons;
      }
    }
    p.batches.emplace_back(b, std::move(samples));
    p.sm_mhz.push_back(std::move(sm));
    p.reasons.push_back(reasons);
  }
  exec.reset();  // the engine below measures with its own executor
  p.overhead = std::max(0.0, engine_round_trip(spec, crops.front(), 100) -
                                 mean(p.batches.front().second));
  std::printf("P5c %-9s %7.1f MB: disk->host %7.1f ms, host->device %6.2f ms, batch 1 %6.2f ms, "
              "batch %u %7.2f ms, engine overhead %.3f ms\n", model.c_str(), p.bytes / 1e6,
              median(p.disk_host) * 1e3, median(p.host_device) * 1e3,
              median(p.batches.front().second) * 1e3, p.batches.back().first,
              median(p.batches.back().second) * 1e3, p.overhead * 1e3);
  return p;
}

std::string ms_list(const std::vector<double>& seconds) {
  std::ostringstream s;
  s.precision(6);
  s << "[";
  for (size_t i = 0; i < seconds.size(); ++i) s << (i ? ", " : "") << seconds[i] * 1e3;
  return s.str() + "]";
}

void write_yaml(const BenchOptions& o, const std::vector<ModelProfile>& profiles) {
  char date[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
  std::ofstream f(o.out_dir + "/gpu-profile.yaml");
  f.precision(6);
  f << "# Measured by scripts/gpu-check (tests/gpu/bench_gpu_profile.cpp) on " << o.gpu
    << ", " << date << ",\n# LibTorch " << torch_version()
    << ": the engine's TorchExecutor (TF32 convolutions, LibTorch's default), batches from\n"
       "# host uint8 crops to host logits; loads synchronized; sizes are the bytes the device "
       "holds;\n# request_overhead_ms.after: an in-process client's round trip through the "
       "engine at\n# concurrency 1 (batching none) less the batch (no HTTP, no decoding).\n"
    << "description: \"torchvision models (random weights) on " << o.gpu
    << ", measured by scripts/gpu-check\"\n"
    << "source: \"scripts/gpu-check, " << date << ", LibTorch " << torch_version() << "\"\n"
    << "models:\n";
  for (const ModelProfile& p : profiles) {
    f << "  " << p.name << ":\n    size_bytes: " << p.bytes << "\n    batch_latency_ms:\n";
    for (const auto& [b, s] : p.batches)
      f << "      - {batch: " << b << ", mean: " << mean(s) * 1e3 << ", stddev: "
        << stddev(s) * 1e3 << ", samples: " << ms_list(s) << "}\n";
    f << "    load_ms:\n      disk->host: " << median(p.disk_host) * 1e3
      << "\n      host->device: " << median(p.host_device) * 1e3 << "\n"
      << "    load_samples_ms:\n      disk->host: " << ms_list(p.disk_host)
      << "\n      host->device: " << ms_list(p.host_device) << "\n"
      << "    request_overhead_ms: {after: " << p.overhead * 1e3 << "}\n";
  }
  if (!f) throw std::runtime_error("cannot write gpu-profile.yaml");
  std::printf("bench_gpu: wrote %s/gpu-profile.yaml\n", o.out_dir.c_str());
}

}  // namespace

void bench_profile(const BenchOptions& o) {
  const std::vector<uint32_t> dense = {1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 24, 32, 48, 64, 96, 128};
  const std::vector<uint32_t> coarse = {1, 2, 4, 8, 16, 32, 64, 128};
  const GpuClockReader clocks;
  if (!clocks.read()) std::printf("P5c: NVML gives no clocks here; the records go without\n");
  std::vector<ModelProfile> profiles;
  for (const char* model : {"alexnet", "resnet18", "resnet50", "vgg16"})
    profiles.push_back(measure(model, std::string(model) == "alexnet" ? dense : coarse, clocks));
  std::vector<std::string> records;
  for (const ModelProfile& p : profiles)
    for (size_t k = 0; k < p.batches.size(); ++k) {
      const auto& [b, s] = p.batches[k];
      const std::vector<unsigned>& sm = p.sm_mhz[k];
      const auto [lo, hi] = sm.empty() ? std::pair<double, double>{NAN, NAN}
                                       : std::pair<double, double>{
                                             *std::min_element(sm.begin(), sm.end()),
                                             *std::max_element(sm.begin(), sm.end())};
      records.push_back(jobj({{"model", jstr(p.name)}, {"batch", jnum(b)},
                              {"sm_mhz_min", jnum(lo)}, {"sm_mhz_max", jnum(hi)},
                              {"clock_event_reasons", jnum(double(p.reasons[k]))},
                              {"mean_ms", jnum(mean(s) * 1e3)},
                              {"median_ms", jnum(median(s) * 1e3)},
                              {"stddev_ms", jnum(stddev(s) * 1e3)},
                              {"bytes", jnum(double(p.bytes))},
                              {"disk_host_ms", jnum(median(p.disk_host) * 1e3)},
                              {"host_device_ms", jnum(median(p.host_device) * 1e3)},
                              {"overhead_ms", jnum(p.overhead * 1e3)}}));
    }
  write_records(o, "profile.json", records);
  write_yaml(o, profiles);
}

}  // namespace servelab::gpu
