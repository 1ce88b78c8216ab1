// P5a swap: the engine's host -> device load (TorchExecutor::load, synchronized) of resnet18,
// resnet50 and vgg16 against raw copies of the same bytes: one pinned buffer (the PCIe
// ceiling, what Clockwork's 78% is measured against), the module's own pinned tensors one by
// one (no engine around them), and one pageable buffer (what pinning saves). Variants
// alternate within each repetition; medians are reported.
#include <torch/script.h>
#include <torch/cuda.h>

#include <cstdio>
#include <vector>

#include "tests/gpu/bench_gpu.h"
#include "tests/gpu/gpu_env.h"

namespace servelab::gpu {
namespace {

constexpr int kRepetitions = 7;

// The module's parameters and buffers, pinned: what the engine's host copy holds.
std::vector<at::Tensor> pinned_tensors(const std::string& file) {
  torch::NoGradGuard no_grad;
  torch::jit::Module m = torch::jit::load(file, torch::kCPU);
  std::vector<at::Tensor> out;
  for (const auto& p : m.parameters(true)) out.push_back(p.pin_memory());
  for (const auto& b : m.buffers(true)) out.push_back(b.pin_memory());
  return out;
}

std::string swap_record(const std::string& model, uint64_t bytes, size_t tensors,
                        const std::vector<double> (&t)[4], const std::vector<double>& disk) {
  const double gb = bytes / 1e9;
  const double engine = median(t[0]), raw = median(t[1]);
  std::printf("P5a %-9s %7.1f MB: engine %6.2f ms %6.1f GB/s | raw pinned %6.2f ms %6.1f GB/s "
              "| ratio %.3f | raw per tensor %6.1f GB/s | pageable %6.1f GB/s\n",
              model.c_str(), bytes / 1e6, engine * 1e3, gb / engine, raw * 1e3, gb / raw,
              raw / engine, gb / median(t[2]), gb / median(t[3]));
  return jobj({{"model", jstr(model)}, {"bytes", jnum(double(bytes))},
               {"tensors", jnum(double(tensors))},
               {"engine_s", jnum(engine)}, {"engine_gbps", jnum(gb / engine)},
               {"raw_pinned_s", jnum(raw)}, {"raw_pinned_gbps", jnum(gb / raw)},
               {"raw_tensors_gbps", jnum(gb / median(t[2]))},
               {"pageable_gbps", jnum(gb / median(t[3]))},
               {"ratio", jnum(raw / engine)}, {"disk_to_host_s", jnum(median(disk))}});
}

}  // namespace

void bench_swap(const BenchOptions& o) {
  std::vector<std::string> records;
  const auto cuda = torch::Device(torch::kCUDA);
  for (const char* model : {"resnet18", "resnet50", "vgg16"}) {
    auto exec = runtime::make_torch_executor("cuda", 1);
    const runtime::ModelSpec spec = model_spec(model);
    const uint64_t bytes = exec->add(0, spec, 1, 1).param_bytes;
    const std::vector<at::Tensor> tensors = pinned_tensors(spec.file);
    const at::Tensor pinned = torch::empty({int64_t(bytes)}, torch::kUInt8).pin_memory();
    const at::Tensor pageable = torch::empty({int64_t(bytes)}, torch::kUInt8).fill_(1);
    std::vector<double> t[4], disk;
    for (int rep = -1; rep < kRepetitions; ++rep) {  // rep -1: warm-up, not recorded
      double s[4];
      s[0] = timed_on_device([&] { exec->load(0, Tier::Host, Tier::Device); });
      exec->evict(0, Tier::Device);
      s[1] = timed_on_device([&] { auto d = pinned.to(cuda, /*non_blocking=*/true); });
      s[2] = timed_on_device([&] {
        std::vector<at::Tensor> d;
        for (const auto& h : tensors) d.push_back(h.to(cuda, /*non_blocking=*/true));
      });
      s[3] = timed_on_device([&] { auto d = pageable.to(cuda, /*non_blocking=*/true); });
      if (rep < 0) continue;
      for (int v = 0; v < 4; ++v) t[v].push_back(s[v]);
      if (rep < 3) disk.push_back(timed_on_device([&] { exec->load(0, Tier::Disk, Tier::Host); }));
    }
    records.push_back(swap_record(model, bytes, tensors.size(), t, disk));
  }
  write_records(o, "swap.json", records);
}

}  // namespace servelab::gpu
