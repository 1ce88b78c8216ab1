// The machine's speed course as `servelab profile` measures it (profiles/speed_course.h):
// batches of 1 of one model back to back, and the fit of their costs' rank autocorrelation.
#pragma once

#include <functional>
#include <string>

#include "engine/control/types.h"
#include "engine/runtime/executor.h"
#include "profiles/speed_course.h"

namespace servelab::experiments {

// Batches of 1 of `spec` back to back for `seconds` (at most 20,000): how the machine's speed
// moves from pass to pass, which the profiler's rounds over batch sizes (each size's passes
// spread over the whole measurement) cannot show. The model is added under `id` and removed
// after; `image` is the request image's bytes. None when `seconds` is not positive. Runs on
// the calling thread (the profiler's prepared worker thread).
SpeedDrift measure_speed_course(double seconds, runtime::Executor& exec, ModelId id,
                                const runtime::ModelSpec& spec, const std::string& image,
                                const std::function<void(const std::string&)>& log);

}  // namespace servelab::experiments
