// A model's Disk -> Host load as the engine's loader pays it, by source
// (engine/control/load_sources.h): from its TorchScript file in the page cache or read from
// the disk, and through a weight store with its blobs resident or read from the disk, or
// with another model of its code loaded. Each
// sample evicts the model, loads it on a loader thread of its own (as the engine's) and runs
// one batch on the calling thread (the profiler's prepared worker thread).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "engine/control/cost_profile.h"
#include "engine/runtime/executor.h"
#include "engine/runtime/task_thread.h"

namespace servelab::experiments {

// One timed load: the eviction before it, the load's wall time and its phases (which may
// leave some of it out), the first batch after it.
struct LoadSample {
  double evict_s = 0;
  double load_s = 0;
  runtime::LoadParts parts;
  double first_batch_s = 0;
};

// Evicts `id` from the host tier and loads it again on `loader` (`before_load`, when given,
// runs on the loader in between: the evicted copy's pages are no longer in use there), then
// runs one batch of `input` on this thread. Rethrows what the executor threw.
LoadSample sample_load(runtime::TaskThread& loader, runtime::Executor& exec, ModelId id,
                       const runtime::Input& input,
                       const std::function<void()>& before_load = {});

// The samples' median phases (first_batch: the median first batch less `warm_batch_s`, at
// least 0), scaled so that the load's phases sum to the median load wall time, which a sum
// of per-phase medians is not.
LoadCost median_cost(const std::vector<LoadSample>& samples, double warm_batch_s);

// Measures `spec`'s load from the file read from the disk (on `exec`, where it is added as
// `id`) and through a weight store in a temporary directory (a second executor of its own),
// its blobs resident, read from the disk, and with a sibling of the same code loaded (added
// there as id + 1): `samples` timed loads each, after one untimed.
// Fills p.load_sources; nothing when `samples` is 0. The store is deleted afterwards.
void measure_load_sources(runtime::Executor& exec, ModelId id, const runtime::ModelSpec& spec,
                          const runtime::Input& input, int threads, uint32_t samples,
                          ModelProfile& p, const std::function<void(const std::string&)>& log);

}  // namespace servelab::experiments
