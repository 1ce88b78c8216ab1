// The engine serving two models that do not both fit in the device budget, on a real CUDA
// GPU (issue 17; Rafiqi 3.4: one load at a time): every request succeeds with the CPU's
// answer, each switch is one load and one eviction, and no load overlaps another.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <mutex>
#include <vector>

#include "tests/gpu/gpu_env.h"
#include "tests/integration/runtime/runtime_test_util.h"  // Collector

namespace servelab::gpu {
namespace {

using runtime::ClassifyResult;
using runtime::Input;
using runtime::test::Collector;

// The loads the engine reports through EngineOptions::on_load, with CUDA's allocated bytes
// just after each.
struct LoadLog {
  std::mutex mu;
  std::vector<runtime::LoadSpan> spans;
  std::vector<uint64_t> allocated_after;
};

std::vector<float> cpu_output(const runtime::ModelSpec& spec, const Input& in) {
  auto cpu = runtime::make_torch_executor("cpu", 8);
  cpu->add(0, spec, 1, 1);
  std::vector<std::vector<float>> out;
  cpu->run(0, Tier::Host, {&in}, out);
  return out.at(0);
}

}  // namespace

TEST_CASE("engine on the GPU: two models that do not both fit are served alternately",
          "[gpu]") {
  if (!cuda_ready()) FAIL("LibTorch sees no CUDA device");
  const runtime::ModelSpec a = model_spec("resnet18", "a"), b = model_spec("resnet50", "b");
  const uint32_t max_batch = 8;
  // The sizes the engine will account (parameters + workspace at max batch), measured as the
  // engine measures them; the budget holds the larger and half the smaller, not both.
  uint64_t size_a = 0, size_b = 0;
  {
    auto probe = runtime::make_torch_executor("cuda", 1);
    auto ma = probe->add(0, a, max_batch, 1), mb = probe->add(1, b, max_batch, 1);
    size_a = ma.param_bytes + ma.workspace_bytes;
    size_b = mb.param_bytes + mb.workspace_bytes;
  }
  const uint64_t budget = std::max(size_a, size_b) + std::min(size_a, size_b) / 2;
  REQUIRE(budget < size_a + size_b);

  LoadLog log;
  runtime::EngineOptions o;
  o.device = "cuda";
  o.control.workers = 2;
  o.control.max_batch = max_batch;
  o.control.budgets[static_cast<int>(Tier::Device)].bytes = budget;
  o.on_load = [&log](const runtime::LoadSpan& s) {
    const uint64_t bytes = cuda_allocated_bytes();
    std::lock_guard lock(log.mu);
    log.spans.push_back(s);
    log.allocated_after.push_back(bytes);
  };
  runtime::Engine engine(o);
  engine.register_model(a);
  engine.register_model(b);
  const uint64_t allocated_at_start = cuda_allocated_bytes();

  const Input crop = random_crop(224, 224, 7);
  const Input image = normalized_on_cpu(crop, a.preprocess);  // a and b normalize alike
  const std::vector<float> ref_a = cpu_output(a, image), ref_b = cpu_output(b, image);

  auto check_answer = [&](const ClassifyResult& r, const std::vector<float>& ref) {
    INFO("status " << static_cast<int>(r.status) << ": " << r.error);
    REQUIRE(r.status == RequestStatus::Ok);
    CHECK(relative_error({r.output}, {ref}) <= 2e-2);  // TF32 convolutions (the default)
  };

  SECTION("one request at a time, alternating: every switch loads one and evicts the other") {
    const int n = 12;
    for (int i = 0; i < n; ++i) {
      Collector answers;
      const bool to_a = i % 2 == 0;
      REQUIRE(engine.infer(to_a ? "a" : "b", image.chw, answers.callback()) == 0);
      check_answer(answers.wait(1).at(0), to_a ? ref_a : ref_b);
    }
    const auto sa = engine.model("a"), sb = engine.model("b");
    REQUIRE((sa && sb));
    CHECK(sa->counters.loads + sb->counters.loads == n);
    CHECK(sa->counters.evictions + sb->counters.evictions == n - 1);
    CHECK(sa->resident_device != sb->resident_device);
  }
  SECTION("a burst of both models' requests at once: all succeed") {
    const int n = 32;
    Collector answers;
    for (int i = 0; i < n; ++i)
      REQUIRE(engine.infer(i % 2 ? "b" : "a", image.chw, answers.callback()) == 0);
    for (const ClassifyResult& r : answers.wait(n)) REQUIRE(r.status == RequestStatus::Ok);
  }

  std::lock_guard lock(log.mu);
  std::vector<runtime::LoadSpan> spans = log.spans;
  std::sort(spans.begin(), spans.end(),
            [](const auto& x, const auto& y) { return x.start < y.start; });
  REQUIRE(spans.size() >= 2);
  for (size_t i = 0; i < spans.size(); ++i) {
    CHECK(spans[i].ok);
    CHECK(spans[i].to == Tier::Device);
    if (i > 0) CHECK(spans[i].start >= spans[i - 1].end);  // one load at a time
  }
  // The device never holds more than the budget, plus what the CUDA libraries keep for
  // themselves (cuBLAS and cuDNN workspaces: outside any model's accounting).
  const uint64_t peak = *std::max_element(log.allocated_after.begin(), log.allocated_after.end());
  std::printf("engine: %zu loads, budget %.1f MB, device peak after a load %.1f MB above the "
              "start\n", spans.size(), budget / 1e6, (peak - allocated_at_start) / 1e6);
  CHECK(peak <= allocated_at_start + budget + (64ull << 20));
}

}  // namespace servelab::gpu
