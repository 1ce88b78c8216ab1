// The loops P5b times (bench_gpu_batch.cpp, bench_gpu_paired.cpp): the raw LibTorch loop and
// the whole engine in a closed loop, and how a loop's pace is timed. Included by those two
// only (it includes LibTorch).
#pragma once

#include <sys/resource.h>
#include <torch/script.h>

#include <ctime>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/runtime/engine.h"
#include "engine/runtime/executor.h"
#include "engine/runtime/task_thread.h"
#include "engine/runtime/torch_tiers.h"
#include "tests/gpu/gpu_env.h"

namespace torch::jit {
TORCH_API void setGraphExecutorOptimize(bool o);
}  // namespace torch::jit

namespace servelab::gpu {

using runtime::Input;

// A variant's pace in one round: batches per second, and the timing thread's CPU time per
// batch and involuntary context switches per second (zero for the engine's variants).
struct Rate {
  double bps = 0, cpu_ms = 0, preempted_per_s = 0;
};

// This thread's CPU time (s) and involuntary context switches so far.
inline std::pair<double, long> thread_usage() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  rusage ru{};
  getrusage(RUSAGE_THREAD, &ru);
  return {static_cast<double>(ts.tv_sec) + ts.tv_nsec * 1e-9, ru.ru_nivcsw};
}

// The pace of `step` on this thread, run for at least `seconds` (and 5 batches) after 3
// warm-ups.
template <class F>
Rate timed_rate(F&& step, double seconds) {
  for (int i = 0; i < 3; ++i) step();
  int n = 0;
  const auto usage0 = thread_usage();
  const auto t0 = std::chrono::steady_clock::now();
  while (n < 5 || seconds_since(t0) < seconds) {
    step();
    ++n;
  }
  const double wall = seconds_since(t0);
  const auto usage1 = thread_usage();
  return {n / wall, (usage1.first - usage0.first) / n * 1e3,
          static_cast<double>(usage1.second - usage0.second) / wall};
}

// `f()` run as a task on `thread` (a worker-like thread), its result returned here.
inline Rate on_thread(runtime::TaskThread& thread, const std::function<Rate()>& f) {
  std::promise<Rate> result;
  thread.post([&] {
    try {
      result.set_value(f());
    } catch (...) {
      result.set_exception(std::current_exception());
    }
  });
  return result.get_future().get();
}

// The request crops of one P5b batch of b (seeded alike for every variant), and pointers to
// them as the executor takes them. Not copyable: the pointers point into `crops`.
struct BatchCrops {
  std::vector<Input> crops;
  std::vector<const Input*> ptrs;
  explicit BatchCrops(size_t b) {
    for (size_t i = 0; i < b; ++i) crops.push_back(random_crop(224, 224, 1000 + i));
    for (const Input& in : crops) ptrs.push_back(&in);
  }
  BatchCrops(const BatchCrops&) = delete;
  BatchCrops& operator=(const BatchCrops&) = delete;
};

// A CUDA executor holding `spec` (max batch b) as model 0, loaded onto the device.
inline std::unique_ptr<runtime::Executor> device_executor(const runtime::ModelSpec& spec,
                                                          size_t b) {
  auto exec = runtime::make_torch_executor("cuda", 1);
  exec->add(0, spec, static_cast<uint32_t>(b), 1);
  exec->load(0, Tier::Host, Tier::Device);
  return exec;
}

// The raw loop: a module moved to the device and the same data path as the engine's. Two
// of the executor's differences can be switched on, one at a time, to price each:
// `as_engine_loads` builds the device module as the executor's load does (its tensors views
// into one packed copy); `staging_per_batch` takes each batch's pinned staging buffer from
// LibTorch's caching host allocator, as the executor does, instead of reusing one. Each loop
// also sums the time its forward takes to issue (until the module's forward returns, before
// the logits' copy waits for the device).
struct RawLoop {
  torch::jit::Module module;
  const std::vector<Input>& crops;
  bool staging_per_batch = false;
  at::Tensor staging, mean255, inv_std255;
  double issue_s = 0;
  long forwards = 0;

  RawLoop(const runtime::ModelSpec& spec, const std::vector<Input>& c, bool as_engine_loads,
          bool fresh_staging)
      : crops(c), staging_per_batch(fresh_staging) {
    module = torch::jit::load(spec.file, torch::kCPU);
    module.eval();
    if (as_engine_loads) {
      module = *runtime::copy_to_device(*runtime::packed(module, /*pinned=*/true),
                                        torch::Device(torch::kCUDA));
      cuda_sync();  // the copies are asynchronous
    } else {
      module.to(torch::Device(torch::kCUDA));
    }
    staging = new_staging();
    const auto& pp = spec.preprocess;
    auto opts = torch::TensorOptions().dtype(torch::kFloat).device(torch::kCUDA);
    mean255 = torch::tensor({255 * pp.mean[0], 255 * pp.mean[1], 255 * pp.mean[2]}, opts)
                  .view({1, 3, 1, 1});
    inv_std255 = torch::tensor({1 / (255 * pp.std[0]), 1 / (255 * pp.std[1]),
                                1 / (255 * pp.std[2])}, opts).view({1, 3, 1, 1});
  }
  at::Tensor new_staging() const {
    const int64_t item = static_cast<int64_t>(crops.front().hwc.size());
    at::Tensor t = torch::empty({static_cast<int64_t>(crops.size()), 224, 224, 3},
                                torch::TensorOptions().dtype(torch::kUInt8).pinned_memory(true));
    TORCH_CHECK(t.numel() == item * static_cast<int64_t>(crops.size()));
    return t;
  }
  void gather() {
    if (staging_per_batch) staging = new_staging();
    uint8_t* dst = staging.data_ptr<uint8_t>();
    for (const Input& in : crops) dst = std::copy(in.hwc.begin(), in.hwc.end(), dst);
  }
  void forward() {
    c10::InferenceMode guard;
    const auto t0 = std::chrono::steady_clock::now();
    at::Tensor x = staging.to(torch::kCUDA, /*non_blocking=*/true);
    x = x.permute({0, 3, 1, 2}).to(torch::kFloat).sub_(mean255).mul_(inv_std255);
    at::Tensor logits = module.forward({x}).toTensor();
    issue_s += seconds_since(t0);
    ++forwards;
    at::Tensor out = logits.to(torch::kCPU);
  }
  // Milliseconds per forward spent issuing it, over every forward so far.
  double issue_ms() const { return forwards ? issue_s / forwards * 1e3 : 0; }
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
  double queue_s = 0, compute_s = 0;  // summed over the requests answered in this round
  size_t requests = 0;
  std::vector<double> round_queue_ms, round_compute_ms;  // their means, per round

  // `in_flight` batches outstanding on `workers` workers.
  EngineLoop(const runtime::ModelSpec& spec, const std::vector<Input>& crops, uint32_t workers,
             uint32_t in_flight)
      : answered(in_flight, 0) {
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
          queue_s += r.queue_s;
          compute_s += r.compute_s;
          ++requests;
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
    {
      std::lock_guard lock(mu);
      queue_s = compute_s = 0;
      requests = 0;
    }
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
    std::lock_guard lock(mu);
    const double answers = static_cast<double>(std::max<size_t>(requests, 1));
    round_queue_ms.push_back(queue_s / answers * 1e3);
    round_compute_ms.push_back(compute_s / answers * 1e3);
    return n / elapsed;
  }
  // A request's time in the queue and in compute (ms): the median round's means.
  std::pair<double, double> split_ms() const {
    return {median(round_queue_ms), median(round_compute_ms)};
  }
};

}  // namespace servelab::gpu
