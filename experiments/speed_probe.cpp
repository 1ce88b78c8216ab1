#include "experiments/speed_probe.h"

#include <chrono>
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

}  // namespace servelab::experiments
