// Rafiqi figure 5 on the real engine on the GPU: one model (alexnet, the CaffeNet of the
// paper's era), one worker, one context, quantum 10 ms, max batch 128, Rafiqi's adaptive
// batching against none, closed loops of 1 to 256 requests in flight. The engine runs in this
// process and the clients call it directly (no HTTP: the GPU machine has no Boost to build
// the server). Each point: 0.3 s of warm-up, then 1.5 s measured; a request counts when it
// completes inside the window. Writes sweep.json (scripts/gpu-report sets the simulator's
// prediction on the profile measured before it beside it).
#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <memory>
#include <mutex>

#include "tests/gpu/bench_gpu.h"
#include "tests/gpu/gpu_env.h"

namespace servelab::gpu {
namespace {

using Clock = std::chrono::steady_clock;

// `in_flight` clients, each sending its next request when its answer arrives.
class ClosedLoop {
 public:
  ClosedLoop(runtime::Engine& engine, std::string model, std::shared_ptr<const runtime::Input> in)
      : engine_(engine), model_(std::move(model)), input_(std::move(in)) {}

  // Latencies (s) of the requests completed inside [warmup, warmup + window) after the start.
  std::vector<double> run(size_t in_flight, double warmup, double window) {
    sent_.assign(in_flight, Clock::now());
    const auto t0 = Clock::now();
    const auto from = t0 + std::chrono::duration<double>(warmup);
    const auto until = from + std::chrono::duration<double>(window);
    for (size_t c = 0; c < in_flight; ++c) send(c);
    std::vector<double> latencies;
    for (size_t open = in_flight; open > 0;) {
      const auto [client, at] = next_answer();
      if (at >= from && at < until)
        latencies.push_back(std::chrono::duration<double>(at - sent_[client]).count());
      if (at < until) send(client);
      else --open;
    }
    return latencies;
  }

 private:
  void send(size_t client) {
    sent_[client] = Clock::now();
    const int rc = engine_.submit_together(
        model_, {input_}, {runtime::RequestOptions{}}, 1,
        [this, client](size_t, runtime::ClassifyResult r) {
          const auto at = Clock::now();
          std::lock_guard lock(mu_);
          failed_ += r.status != RequestStatus::Ok;
          answers_.emplace_back(client, at);
          cv_.notify_all();
        });
    if (rc != 0) throw std::runtime_error("submit_together answered " + std::to_string(rc));
  }
  std::pair<size_t, Clock::time_point> next_answer() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return !answers_.empty(); });
    if (failed_) throw std::runtime_error("the engine failed a request");
    auto a = answers_.front();
    answers_.pop_front();
    return a;
  }

  runtime::Engine& engine_;
  std::string model_;
  std::shared_ptr<const runtime::Input> input_;
  std::vector<Clock::time_point> sent_;  // the main thread's alone
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::pair<size_t, Clock::time_point>> answers_;
  size_t failed_ = 0;
};

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * v.size()))];
}

}  // namespace

void bench_sweep(const BenchOptions& o) {
  constexpr double kWarmup = 0.3, kWindow = 1.5;
  const runtime::ModelSpec spec = model_spec("alexnet");
  auto input = std::make_shared<const runtime::Input>(random_crop(224, 224, 5));
  std::vector<std::string> records;
  for (const char* policy : {"rafiqi-ewma", "none"}) {
    runtime::EngineOptions eo;
    eo.device = "cuda";
    eo.control.workers = 1;
    eo.control.quantum = 0.010;
    eo.control.max_batch = 128;
    eo.control.batching = {policy, {}};
    runtime::Engine engine(eo);
    engine.register_model(spec);
    ClosedLoop loop(engine, spec.name, input);
    for (size_t c = 1; c <= 256; c *= 2) {
      const std::vector<double> lat = loop.run(c, kWarmup, kWindow);
      const double rps = lat.size() / kWindow;
      std::printf("sweep %-11s c=%3zu: %8.1f req/s, mean %7.2f ms, p99 %7.2f ms\n", policy, c,
                  rps, mean(lat) * 1e3, percentile(lat, 0.99) * 1e3);
      records.push_back(jobj({{"policy", jstr(policy)}, {"concurrency", jnum(double(c))},
                              {"throughput_rps", jnum(rps)},
                              {"latency_mean_ms", jnum(mean(lat) * 1e3)},
                              {"latency_p90_ms", jnum(percentile(lat, 0.90) * 1e3)},
                              {"latency_p99_ms", jnum(percentile(lat, 0.99) * 1e3)},
                              {"completed", jnum(double(lat.size()))}}));
    }
  }
  write_records(o, "sweep.json", records);
}

}  // namespace servelab::gpu
