// The machine's speed course as `servelab measure` measures it (calibration/terms/speed_course.h):
// batches of 1 of one model back to back, and the fit of their costs' rank autocorrelation;
// and its slowdown after idling (calibration/terms/idle_slowdown.h).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "engine/control/types.h"
#include "engine/runtime/executor.h"
#include "calibration/terms/idle_slowdown.h"
#include "calibration/terms/speed_course.h"

namespace servelab::experiments {

// `spec` added to `exec` under `id` for batches of one request image, warmed by one batch,
// and removed again when this goes. Used on one thread, prepared as an engine worker's is.
class BatchOfOne {
 public:
  BatchOfOne(runtime::Executor& exec, ModelId id, const runtime::ModelSpec& spec,
             const std::string& image);
  ~BatchOfOne();
  BatchOfOne(const BatchOfOne&) = delete;
  BatchOfOne& operator=(const BatchOfOne&) = delete;
  void run() { exec_.run(id_, Tier::Host, one_, probs_); }

 private:
  runtime::Executor& exec_;
  ModelId id_;
  runtime::Input input_;
  std::vector<const runtime::Input*> one_{&input_};
  std::vector<std::vector<float>> probs_;
};

// Runs `body` on a thread of its own prepared as the engine prepares its workers
// (Executor::prepare_thread), and rethrows what it threw. The profiler's measurements run
// there, as the engine's batches run on its worker threads.
void on_prepared_thread(runtime::Executor& exec, const std::function<void()>& body);

// Batches of 1 of `spec` back to back for `seconds` (at most 20,000): how the machine's speed
// moves from pass to pass, which the profiler's rounds over batch sizes (each size's passes
// spread over the whole measurement) cannot show. The model is added under `id` and removed
// after; `image` is the request image's bytes. None when `seconds` is not positive. Runs on
// the calling thread (the profiler's prepared worker thread).
SpeedDrift measure_speed_course(double seconds, runtime::Executor& exec, ModelId id,
                                const runtime::ModelSpec& spec, const std::string& image,
                                const std::function<void(const std::string&)>& log);

// The idle gaps (seconds) measure_idle_slowdown asks for: a closed loop's worker idles for a
// round trip and, in quantum mode, until the next tick.
inline const std::vector<double> kIdleGaps = {0.001, 0.003, 0.010};

// Batches of 1 of `spec` in blocks of 8 for `seconds` (at least two rounds): each round a
// block back to back, then a block per gap of kIdleGaps with each batch started that long
// after the last one ended; the fit of the blocks (fit_idle_slowdown). The model is added
// under `id` and removed after. None when `seconds` is not positive. Runs on the calling
// thread (the profiler's prepared worker thread).
IdleSlowdown measure_idle_slowdown(double seconds, runtime::Executor& exec, ModelId id,
                                   const runtime::ModelSpec& spec, const std::string& image,
                                   const std::function<void(const std::string&)>& log);

}  // namespace servelab::experiments
