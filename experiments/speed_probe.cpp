#include "experiments/speed_probe.h"

#include <chrono>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "engine/runtime/preprocess.h"

namespace servelab::experiments {

SpeedDrift measure_speed_course(double seconds, runtime::Executor& exec, ModelId id,
                                const runtime::ModelSpec& spec, const std::string& image,
                                const std::function<void(const std::string&)>& log) {
  using Clock = std::chrono::steady_clock;
  if (!(seconds > 0)) return {};
  exec.add(id, spec, 1, 1);
  const runtime::Input input = runtime::preprocess_image(image, spec.preprocess, true);
  std::vector<const runtime::Input*> one(1, &input);
  std::vector<std::vector<float>> probs;
  exec.run(id, Tier::Host, one, probs);  // warm
  std::vector<Time> starts;
  std::vector<double> costs;
  const auto begin = Clock::now();
  while (seconds_since(begin) < seconds && costs.size() < 20000) {
    const auto t0 = Clock::now();
    exec.run(id, Tier::Host, one, probs);
    costs.push_back(seconds_since(t0));
    starts.push_back(std::chrono::duration<double>(t0 - begin).count());
  }
  exec.remove(id);
  const SpeedDrift d = fit_speed_drift(starts, costs);
  if (log) log(spec.name + ": speed course over " + std::to_string(costs.size()) +
               " passes of batch 1: fast share " + std::to_string(d.fast.share) + ", tau " +
               std::to_string(d.fast.tau * 1e3) + " ms; slow share " +
               std::to_string(d.slow.share) + ", tau " + std::to_string(d.slow.tau * 1e3) + " ms");
  return d;
}

namespace {

// One block of `n` batches of 1, each started `gap` seconds after the last ended (0: back to
// back); `last_end` is when the batch before the block ended.
IdleBlock run_block(runtime::Executor& exec, ModelId id,
                    const std::vector<const runtime::Input*>& one, double gap, int n,
                    std::chrono::steady_clock::time_point& last_end) {
  using Clock = std::chrono::steady_clock;
  std::vector<std::vector<float>> probs;
  IdleBlock b{gap, 0, 0};
  for (int i = 0; i < n; ++i) {
    if (gap > 0) std::this_thread::sleep_until(last_end + std::chrono::duration<double>(gap));
    const auto t0 = Clock::now();
    b.gap += std::chrono::duration<double>(t0 - last_end).count() / n;
    exec.run(id, Tier::Host, one, probs);
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
  exec.add(id, spec, 1, 1);
  const runtime::Input input = runtime::preprocess_image(image, spec.preprocess, true);
  std::vector<const runtime::Input*> one(1, &input);
  std::vector<std::vector<float>> probs;
  exec.run(id, Tier::Host, one, probs);  // warm
  auto last_end = std::chrono::steady_clock::now();
  const auto begin = last_end;
  std::vector<IdleBlock> blocks;
  for (int round = 0; round < 2 || seconds_since(begin) < seconds; ++round) {
    blocks.push_back(run_block(exec, id, one, 0, 8, last_end));
    for (double gap : kIdleGaps) blocks.push_back(run_block(exec, id, one, gap, 8, last_end));
  }
  exec.remove(id);
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
