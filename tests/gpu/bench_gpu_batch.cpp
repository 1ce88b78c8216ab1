// P5b batching: the engine's batched inference on CUDA for resnet18 and resnet50 at batch 1,
// 4, 16 and 64 against the best raw LibTorch loop on the same GPU. Every variant starts from
// the batch's b uint8 crops in separate host buffers (as requests arrive) and ends with the
// logits on the host (which synchronizes); the forward runs under InferenceMode.
//   raw:         the module alone: the crops gathered into one reused pinned buffer, one copy
//                to the device, normalization there (graph optimizer off and on: the better
//                counts as the raw loop);
//   prebatched:  the raw loop given the batch already gathered (what the gather costs);
//   executor:    TorchExecutor::run on the batch's requests (the worker's call);
//   engine:      the whole engine, one batch in flight: b requests submitted together, a
//                fixed-size batching policy, the controller, a worker thread, per-request
//                answers (softmax, top-1);
//   engine x2:   the same with two workers and two batches in flight (the engine under load).
// Variants alternate in rounds; each round times each variant for seconds_per_variant.
#include <torch/script.h>

#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>

#include "tests/gpu/bench_gpu.h"
#include "tests/gpu/gpu_env.h"

namespace torch::jit {
TORCH_API void setGraphExecutorOptimize(bool o);
}  // namespace torch::jit

namespace servelab::gpu {
namespace {

using runtime::Input;

// Batches per second of `step`, run for at least `seconds` (and 5 batches) after 3 warm-ups.
template <class F>
double batches_per_second(F&& step, double seconds) {
  for (int i = 0; i < 3; ++i) step();
  int n = 0;
  const auto t0 = std::chrono::steady_clock::now();
  while (n < 5 || seconds_since(t0) < seconds) {
    step();
    ++n;
  }
  return n / seconds_since(t0);
}

// The raw loop: a module moved to the device and the same data path as the engine's.
struct RawLoop {
  torch::jit::Module module;
  const std::vector<Input>& crops;
  at::Tensor staging, mean255, inv_std255;

  RawLoop(const runtime::ModelSpec& spec, const std::vector<Input>& c) : crops(c) {
    module = torch::jit::load(spec.file, torch::kCPU);
    module.eval();
    module.to(torch::Device(torch::kCUDA));
    const int64_t item = static_cast<int64_t>(crops.front().hwc.size());
    staging = torch::empty({static_cast<int64_t>(crops.size()), 224, 224, 3},
                           torch::TensorOptions().dtype(torch::kUInt8).pinned_memory(true));
    TORCH_CHECK(staging.numel() == item * static_cast<int64_t>(crops.size()));
    const auto& pp = spec.preprocess;
    auto opts = torch::TensorOptions().dtype(torch::kFloat).device(torch::kCUDA);
    mean255 = torch::tensor({255 * pp.mean[0], 255 * pp.mean[1], 255 * pp.mean[2]}, opts)
                  .view({1, 3, 1, 1});
    inv_std255 = torch::tensor({1 / (255 * pp.std[0]), 1 / (255 * pp.std[1]),
                                1 / (255 * pp.std[2])}, opts).view({1, 3, 1, 1});
  }
  void gather() {
    uint8_t* dst = staging.data_ptr<uint8_t>();
    for (const Input& in : crops) dst = std::copy(in.hwc.begin(), in.hwc.end(), dst);
  }
  void forward() {
    c10::InferenceMode guard;
    at::Tensor x = staging.to(torch::kCUDA, /*non_blocking=*/true);
    x = x.permute({0, 3, 1, 2}).to(torch::kFloat).sub_(mean255).mul_(inv_std255);
    at::Tensor out = module.forward({x}).toTensor().to(torch::kCPU);
  }
};

// The whole engine in a closed loop: `in_flight` batches of b requests outstanding.
struct EngineLoop {
  std::unique_ptr<runtime::Engine> engine;
  std::vector<std::shared_ptr<const Input>> inputs;
  std::string model;
  std::mutex mu;
  std::condition_variable cv;
  std::vector<size_t> answered;  // per slot
  std::deque<size_t> done;       // slots whose batch was fully answered
  size_t failed = 0;

  EngineLoop(const runtime::ModelSpec& spec, const std::vector<Input>& crops, uint32_t workers)
      : answered(workers, 0) {
    runtime::EngineOptions o;
    o.device = "cuda";
    o.control.workers = workers;
    o.default_contexts = workers;  // two batches of the one model may run at once
    o.control.max_batch = static_cast<uint32_t>(crops.size());
    o.control.batching = {"fixed", PolicyParams({{"size", std::to_string(crops.size())}})};
    engine = std::make_unique<runtime::Engine>(o);
    model = engine->register_model(spec).name;
    for (const Input& in : crops) inputs.push_back(std::make_shared<Input>(in));
  }
  void submit(size_t slot) {
    std::vector<runtime::RequestOptions> opts(inputs.size());
    const int rc = engine->submit_together(
        model, inputs, opts, 1, [this, slot](size_t, runtime::ClassifyResult r) {
          std::lock_guard lock(mu);
          failed += r.status != RequestStatus::Ok;
          if (++answered[slot] == inputs.size()) {
            answered[slot] = 0;
            done.push_back(slot);
            cv.notify_all();
          }
        });
    if (rc != 0) throw std::runtime_error("submit_together answered " + std::to_string(rc));
  }
  size_t wait_done() {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return !done.empty(); });
    if (failed) throw std::runtime_error("the engine failed a request");
    const size_t slot = done.front();
    done.pop_front();
    return slot;
  }
  double batches_per_second(double seconds) {
    const size_t slots = answered.size();
    for (size_t s = 0; s < slots; ++s) submit(s);
    for (int i = 0; i < 3; ++i) submit(wait_done());  // warm-up
    int n = 0;
    const auto t0 = std::chrono::steady_clock::now();
    double elapsed = 0;
    while (true) {
      const size_t slot = wait_done();
      ++n;
      elapsed = seconds_since(t0);
      if (n >= 5 && elapsed >= seconds) break;
      submit(slot);
    }
    for (size_t s = 1; s < slots; ++s) wait_done();  // drain the others
    return n / elapsed;
  }
};

std::string batch_record(const char* model, size_t b, const std::vector<double> (&bps)[6]) {
  const double raw = std::max(median(bps[0]), median(bps[1]));
  const double pre = median(bps[2]), exec = median(bps[3]), eng = median(bps[4]);
  const double eng2 = median(bps[5]);
  std::printf("P5b %-8s batch %2zu: raw %7.0f img/s (prebatched %7.0f) | executor %7.0f (%.3f) "
              "| engine %7.0f (%.3f, +%.3f ms/batch) | engine x2 %7.0f (%.3f)\n", model, b,
              raw * b, pre * b, exec * b, exec / raw, eng * b, eng / raw,
              (1 / eng - 1 / raw) * 1e3, eng2 * b, eng2 / raw);
  return jobj({{"model", jstr(model)}, {"batch", jnum(double(b))},
               {"raw_opt_off_ips", jnum(median(bps[0]) * b)},
               {"raw_opt_on_ips", jnum(median(bps[1]) * b)}, {"raw_ips", jnum(raw * b)},
               {"prebatched_ips", jnum(pre * b)}, {"executor_ips", jnum(exec * b)},
               {"engine_ips", jnum(eng * b)}, {"engine2_ips", jnum(eng2 * b)},
               {"executor_ratio", jnum(exec / raw)}, {"engine_ratio", jnum(eng / raw)},
               {"engine2_ratio", jnum(eng2 / raw)},
               {"engine_added_ms", jnum((1 / eng - 1 / raw) * 1e3)}});
}

}  // namespace

void bench_batch(const BenchOptions& o) {
  std::vector<std::string> records;
  const double s = o.seconds_per_variant;
  for (const char* model : {"resnet18", "resnet50"}) {
    const runtime::ModelSpec spec = model_spec(model);
    for (size_t b : {1, 4, 16, 64}) {
      std::vector<Input> crops;
      for (size_t i = 0; i < b; ++i) crops.push_back(random_crop(224, 224, 1000 + i));
      std::vector<const Input*> ptrs;
      for (const Input& in : crops) ptrs.push_back(&in);
      RawLoop raw(spec, crops);
      auto exec = runtime::make_torch_executor("cuda", 1);
      exec->add(0, spec, static_cast<uint32_t>(b), 1);
      exec->load(0, Tier::Host, Tier::Device);
      EngineLoop engine(spec, crops, 1), engine2(spec, crops, 2);
      std::vector<std::vector<float>> out;
      std::vector<double> bps[6];
      for (int r = 0; r < o.rounds; ++r) {
        torch::jit::setGraphExecutorOptimize(false);
        bps[0].push_back(batches_per_second([&] { raw.gather(), raw.forward(); }, s));
        torch::jit::setGraphExecutorOptimize(true);
        bps[1].push_back(batches_per_second([&] { raw.gather(), raw.forward(); }, s));
        torch::jit::setGraphExecutorOptimize(false);  // as the engine's workers run
        bps[2].push_back(batches_per_second([&] { raw.forward(); }, s));
        bps[3].push_back(batches_per_second([&] { exec->run(0, Tier::Device, ptrs, out); }, s));
        bps[4].push_back(engine.batches_per_second(s));
        bps[5].push_back(engine2.batches_per_second(s));
      }
      records.push_back(batch_record(model, b, bps));
    }
  }
  write_records(o, "batch.json", records);
}

}  // namespace servelab::gpu
