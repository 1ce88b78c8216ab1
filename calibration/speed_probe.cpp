#include "calibration/speed_probe.h"

#include <chrono>
#include <exception>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "engine/runtime/preprocess.h"

namespace servelab::experiments {

BatchOfOne::BatchOfOne(runtime::Executor& exec, ModelId id, const runtime::ModelSpec& spec,
                       const std::string& image)
    : exec_(exec), id_(id), input_(runtime::preprocess_image(image, spec.preprocess, true)) {
  exec_.add(id_, spec, 1, 1);
  run();  // warm
}

BatchOfOne::~BatchOfOne() {
  try {
    exec_.remove(id_);
  } catch (...) {  // a destructor does not throw; the probe's result stands
  }
}

void on_prepared_thread(runtime::Executor& exec, const std::function<void()>& body) {
  std::exception_ptr error;
  std::thread([&] {
    try {
      exec.prepare_thread();
      body();
    } catch (...) {
      error = std::current_exception();
    }
  }).join();
  if (error) std::rethrow_exception(error);
}

SpeedDrift measure_speed_course(double seconds, runtime::Executor& exec, ModelId id,
                                const runtime::ModelSpec& spec, const std::string& image,
                                const std::function<void(const std::string&)>& log) {
  using Clock = std::chrono::steady_clock;
  if (!(seconds > 0)) return {};
  std::vector<Time> starts;
  std::vector<double> costs;
  {
    BatchOfOne batch(exec, id, spec, image);
    const auto begin = Clock::now();
    while (seconds_since(begin) < seconds && costs.size() < 20000) {
      const auto t0 = Clock::now();
      batch.run();
      costs.push_back(seconds_since(t0));
      starts.push_back(std::chrono::duration<double>(t0 - begin).count());
    }
  }
  const SpeedDrift d = fit_speed_drift(starts, costs);
  if (log) log(spec.name + ": speed course over " + std::to_string(costs.size()) +
               " passes of batch 1: fast share " + std::to_string(d.fast.share) + ", tau " +
               std::to_string(d.fast.tau * 1e3) + " ms; slow share " +
               std::to_string(d.slow.share) + ", tau " + std::to_string(d.slow.tau * 1e3) + " ms");
  return d;
}

namespace {

// One block of `n` batches, each started `gap` seconds after the last ended (0: back to
// back); `last_end` is when the batch before the block ended.
IdleBlock run_block(BatchOfOne& batch, double gap, int n,
                    std::chrono::steady_clock::time_point& last_end) {
  using Clock = std::chrono::steady_clock;
  IdleBlock b{gap, 0, 0};
  for (int i = 0; i < n; ++i) {
    if (gap > 0) std::this_thread::sleep_until(last_end + std::chrono::duration<double>(gap));
    const auto t0 = Clock::now();
    b.gap += std::chrono::duration<double>(t0 - last_end).count() / n;
    batch.run();
    last_end = Clock::now();
    b.mean_cost += std::chrono::duration<double>(last_end - t0).count() / n;
  }
  if (gap <= 0) b.gap = 0;
  return b;
}

}  // namespace

IdleSlowdown measure_idle_slowdown(double seconds, runtime::Executor& exec, ModelId id,
                                   const runtime::ModelSpec& spec, const std::string& image,
                                   const std::function<void(const std::string&)>& log) {
  if (!(seconds > 0)) return {};
  std::vector<IdleBlock> blocks;
  {
    BatchOfOne batch(exec, id, spec, image);
    auto last_end = std::chrono::steady_clock::now();
    const auto begin = last_end;
    for (int round = 0; round < 2 || seconds_since(begin) < seconds; ++round) {
      blocks.push_back(run_block(batch, 0, 8, last_end));
      for (double gap : kIdleGaps) blocks.push_back(run_block(batch, gap, 8, last_end));
    }
  }
  const IdleSlowdown s = fit_idle_slowdown(blocks);
  if (log) {
    std::string line = spec.name + ": after idling, over back to back (" +
                       std::to_string(blocks.size()) + " blocks of 8 batches of 1):";
    for (const auto& p : s.points)
      line += " " + std::to_string(p.gap * 1e3) + " ms: " + std::to_string(p.factor) + ";";
    log(line);
  }
  return s;
}

}  // namespace servelab::experiments
