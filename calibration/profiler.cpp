#include "calibration/profiler.h"
#include "calibration/profile_plan.h"

#include <algorithm>
#include <future>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <stdexcept>
#include <thread>

#include <nlohmann/json.hpp>

#include "common/clock.h"
#include "common/median.h"
#include "engine/runtime/executor.h"
#include "engine/runtime/preprocess.h"
#include "engine/runtime/task_thread.h"
#include "engine/server/model_manifest.h"
#include "calibration/background_load.h"
#include "calibration/batch_rounds.h"
#include "calibration/load_sources.h"
#include "calibration/served_probe.h"
#include "calibration/speed_probe.h"


namespace servelab::experiments {
namespace {

using Clock = std::chrono::steady_clock;

void mean_stddev(const std::vector<double>& v, double* mean, double* sd) {
  double m = 0;
  for (double x : v) m += x;
  m /= static_cast<double>(v.size());
  double var = 0;
  for (double x : v) var += (x - m) * (x - m);
  *mean = m;
  *sd = v.size() > 1 ? std::sqrt(var / static_cast<double>(v.size() - 1)) : 0;
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("profile: cannot read the request image '" + path + "'");
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

runtime::ModelSpec model_spec(const ProfileOptions& o, const std::string& name) {
  namespace fs = std::filesystem;
  std::string file = (fs::path(o.models_dir) / (name + ".pt")).string();
  if (!fs::exists(file))
    throw std::runtime_error("profile: no model file " + file +
                             " (export models with scripts/make-models)");
  runtime::ModelSpec spec;
  spec.name = name;
  spec.file = file;
  server::apply_manifest(spec, (fs::path(o.models_dir) / (name + ".json")).string());
  return spec;
}

namespace {

// The model whose batch of 1 costs most: its passes are long enough to show the machine's
// slow speed changes rather than cache and scheduler noise.
size_t slowest_batch_of_one(const std::vector<ModelProfile>& models) {
  size_t k = 0;
  for (size_t i = 1; i < models.size(); ++i)
    if (models[i].batch_latency(1) > models[k].batch_latency(1)) k = i;
  return k;
}

// Batch latency per size, timed in BatchRounds' order: rounds over all sizes, each timed pass
// after one of its own size.
void measure_batches(const ProfileOptions& o, runtime::Executor& exec, ModelId id,
                     const runtime::Input& input, ModelProfile& p,
                     const std::function<void(const std::string&)>& log) {
  std::vector<std::vector<float>> probs;
  auto pass = [&](uint32_t batch) {
    std::vector<const runtime::Input*> inputs(batch, &input);
    auto t0 = Clock::now();
    exec.run(id, Tier::Host, inputs, probs);
    return seconds_since(t0);
  };
  std::vector<double> warm(o.batch_sizes.size(), 0);
  for (size_t k = 0; k < o.batch_sizes.size(); ++k)
    for (uint32_t i = 0; i < o.warmup; ++i) warm[k] = pass(o.batch_sizes[k]);
  BatchRounds rounds(o.batches,
                     std::move(warm));
  while (std::optional<BatchRounds::Pass> next = rounds.next())
    rounds.record(pass(o.batch_sizes[next->size]));
  for (size_t k = 0; k < o.batch_sizes.size(); ++k) {
    BatchCost c{o.batch_sizes[k], 0, 0, rounds.samples(k)};
    mean_stddev(c.samples, &c.mean, &c.stddev);
    if (log) log(p.name + ": batch " + std::to_string(c.batch) + " " +
                 std::to_string(c.mean * 1e3) + " ms (sd " + std::to_string(c.stddev * 1e3) +
                 ", n=" + std::to_string(c.samples.size()) + ")");
    p.batches.push_back(std::move(c));
  }
}

// A load as the engine pays it: the executor's Disk -> Host load, plus what the first batch
// on the fresh module costs beyond a warm one (TorchScript optimizes a module's graph on its
// first runs). The engine loads a model only for a batch that waits, so the sum is the
// delay a miss adds; the simulator's batches then cost warm time.
// As in the engine, the eviction and the load run on a loader thread of their own and the
// batch on this one: a module deserialized on another core costs its first batch more than
// on one thread.
// One untimed load first: a fresh loader thread's first load often costs more, which the
// engine's long-lived loader paid before any measured run (real mode warms up). Then loads on
// a time budget (ProfileOptions::min_load_seconds), as batch sizes sample: with a handful of
// loads, the largest one alone sets the simulated p99 of a run where every request misses.
void measure_loads(const ProfileOptions& o, runtime::Executor& exec, ModelId id,
                   const runtime::Input& input, ModelProfile& p,
                   const std::function<void(const std::string&)>& log) {
  std::vector<LoadSample> taken;
  std::vector<double> loads, colds, evicts;
  runtime::TaskThread loader;
  double spent = 0;
  auto wants_load = [&] {
    const size_t n = loads.size();
    if (n < std::max(1u, o.load_samples)) return true;
    return n < o.max_load_samples && spent < o.min_load_seconds;
  };
  for (uint32_t i = 0; i == 0 || wants_load(); ++i) {
    const LoadSample s = sample_load(loader, exec, id, input);
    if (i == 0) continue;  // the warm-up
    const double load_s = s.load_s;
    spent += s.evict_s + load_s + s.first_batch_s;
    taken.push_back(s);
    evicts.push_back(s.evict_s);
    loads.push_back(load_s);
    colds.push_back(std::max(0.0, s.first_batch_s - p.batch_latency(1)));
  }
  // Medians: one disturbed sample of five (a neighbour's burst) moved the mean from ~32 to
  // ~98 ms. The samples keep the spread for the simulator's noisy draws (load_samples_ms).
  double load_mean = median(loads), cold_mean = median(colds);
  p.set_load_time(Tier::Disk, Tier::Host, load_mean + cold_mean);
  p.evict_time[int(Tier::Host)] = median(evicts);  // a miss at a full tier waits for it too
  for (size_t i = 0; i < loads.size(); ++i)  // each miss as paid: load + its first batch
    p.load_samples[int(Tier::Disk)][int(Tier::Host)].push_back(loads[i] + colds[i]);
  p.load_sources[int(LoadSource::File)] = median_cost(taken, p.batch_latency(1));
  if (log) log(p.name + ": disk->host load " + std::to_string(load_mean * 1e3) +
               " ms + first-batch penalty " + std::to_string(cold_mean * 1e3) +
               " ms, eviction " + std::to_string(p.evict_time[int(Tier::Host)] * 1e3) +
               " ms (n=" + std::to_string(loads.size()) + ")");
}

// Measures through the engine's own code paths, so the profile costs what the engine runs:
// loads are the executor's Disk -> Host load (what the loader thread does), batches are the
// executor's run() on preprocessed copies of the request image (stacking, normalization,
// forward under InferenceMode, softmax), with the engine's intra-op thread setting.
ModelProfile measure_model(const ProfileOptions& o, runtime::Executor& exec, ModelId id,
                           const std::string& name, const std::string& image,
                           double* preprocess_s, const std::function<void(const std::string&)>& log) {
  const runtime::ModelSpec spec = model_spec(o, name);
  uint32_t max_batch = *std::max_element(o.batch_sizes.begin(), o.batch_sizes.end());
  runtime::ModelMeasure mm;
  try {
    mm = exec.add(id, spec, max_batch, 1);
  } catch (const std::exception& e) {
    throw std::runtime_error("profile: " + std::string(e.what()));
  }
  ModelProfile p;
  p.name = name;
  p.size_bytes = mm.param_bytes;
  // Preprocessing runs on the server's IO thread before the arrival: part of the request
  // overhead (measure_request_overhead), timed here for the log.
  std::vector<double> pre;
  runtime::Input input;
  for (int i = 0; i < 20; ++i) {
    auto t0 = Clock::now();
    input = runtime::preprocess_image(image, spec.preprocess, true);
    pre.push_back(seconds_since(t0));
  }
  double pre_mean, pre_sd;
  mean_stddev(pre, &pre_mean, &pre_sd);
  *preprocess_s = pre_mean;
  if (log) log(name + ": " + std::to_string(p.size_bytes / 1024) + " KiB, preprocessing " +
               std::to_string(pre_mean * 1e3) + " ms");
  measure_batches(o, exec, id, input, p, log);
  measure_loads(o, exec, id, input, p, log);
  measure_load_sources(exec, id, spec, input, std::max(1, o.threads), o.source_loads, p, log);
  exec.remove(id);
  p.validate();
  return p;
}

// Per size: the median time until the first and the last request of a burst were queued.
void log_cold_bursts(const std::vector<std::vector<double>>& bursts,
                     const std::function<void(const std::string&)>& log) {
  std::map<size_t, std::pair<std::vector<double>, std::vector<double>>> by_size;
  for (const auto& b : bursts) {
    auto& [first, last] = by_size[b.size()];
    first.push_back(*std::min_element(b.begin(), b.end()));
    last.push_back(*std::max_element(b.begin(), b.end()));
  }
  for (const auto& [size, fl] : by_size)
    log("cold bursts of " + std::to_string(size) + " (" + std::to_string(fl.first.size()) +
        "): first queued after " + std::to_string(median(fl.first) * 1e3) + " ms, last after " +
        std::to_string(median(fl.second) * 1e3) + " ms (medians)");
}

void log_background(double cores, const std::function<void(const std::string&)>& log) {
  if (cores < 0) return;
  char line[256];
  std::snprintf(line, sizeof line,
                "other processes used %.2f of %u cores while this was measured%s", cores,
                std::thread::hardware_concurrency(),
                cores > kBusyMachineCores
                    ? ": the machine was busy, and its costs are in this profile; measure again "
                      "on a quiet machine for predictions of a quiet one"
                    : "");
  log(line);
}

}  // namespace

config::ProfileFile measure_profile(const ProfileOptions& o,
                                    const std::function<void(const std::string&)>& log,
                                    const ProfilePhaseStarted& started) {
  const BackgroundLoad background;  // what else ran on the machine meanwhile
  if (o.models.empty()) throw std::runtime_error("profile: no models to measure");
  if (o.batch_sizes.empty()) throw std::runtime_error("profile: no batch sizes");
  ProfilePhases phases(plan_profile(o), started);
  std::string image = read_bytes(o.image.empty() ? o.models_dir + "/" + kDefaultRequestImage
                                                  : o.image);
  auto exec = runtime::make_torch_executor("cpu", std::max(1, o.threads));
  config::ProfileFile profile;
  std::vector<double> preprocess_s(o.models.size());
  // On a thread of its own, as the engine runs batches on worker threads and loads on its
  // loader thread (per-thread OpenMP settings then match the engine's), prepared as the
  // engine prepares its workers: without it, TorchScript's graph optimizer (a thread-local
  // switch) profiled and optimized every freshly loaded module on its first runs, and the
  // profile charged each miss 31 ms of first-batch penalty that the engine's workers pay
  // about 5 ms of (squeezenet1_1; Rafiqi figure 2's sequential access predicted 40% slow).
  on_prepared_thread(*exec, [&] {
    for (size_t i = 0; i < o.models.size(); ++i) {
      phases.next(o.models[i] + ": batches and loads");
      profile.costs.models.push_back(
          measure_model(o, *exec, ModelId(i), o.models[i], image, &preprocess_s[i], log));
    }
    const size_t k = slowest_batch_of_one(profile.costs.models);
    if (o.course_seconds > 0) phases.next("speed course");
    profile.speed_drift = measure_speed_course(o.course_seconds, *exec, ModelId(o.models.size()),
                                               model_spec(o, o.models[k]), image, log);
    if (o.served_idle_turns == 0 && o.idle_seconds > 0) phases.next("idle slowdown");
    if (o.served_idle_turns == 0)
      profile.idle_slowdown = measure_idle_slowdown(
          o.idle_seconds, *exec, ModelId(o.models.size()), model_spec(o, o.models[k]), image, log);
  });
  exec.reset();
  // Each model's overhead is its real round trip less load and compute; it holds the
  // preprocessing (on the IO thread, before the arrival); the rest (HTTP, hand-offs) is split
  // evenly between request and response. The simulator queues the preprocessing part on
  // `io_threads` servers: under a burst each holds one for io_threads / capacity (more than
  // the preprocessing alone when parsing, accepting and the load generator compete for the
  // same cores), measured on the zero-cost probe with the load generator's CPU per request.
  phases.next("zero-cost round trip");
  RoundTrip rt = measure_round_trip(image, std::max(1u, o.overhead_requests));
  double burst = rt.capacity_rps > 0 ? o.io_threads / rt.capacity_rps : 0;
  if (log) log("zero-cost probe: round trip " + std::to_string(rt.seconds * 1e3) +
               " ms; burst capacity " + std::to_string(rt.capacity_rps) +
               " req/s; load generator " + std::to_string(rt.client_seconds * 1e3) +
               " ms CPU per request");
  // The probe's bursts are the server's intake, not a model's: stored once, profile-level.
  if (!o.cold_burst_sizes.empty() && o.cold_bursts > 0) {
    phases.next("cold bursts");
    profile.front_end.cold_bursts = measure_cold_bursts(image, o.cold_burst_sizes, o.cold_bursts);
    if (log) log_cold_bursts(profile.front_end.cold_bursts, log);
  }
  runtime::EngineOptions engine;  // one worker, event mode, no batching: nothing waits
  engine.executor = "torch";
  engine.device = "cpu";
  engine.intra_op_threads = std::max(1, o.threads);
  for (size_t i = 0; i < profile.costs.models.size(); ++i) {
    const ModelProfile& m = profile.costs.models[i];
    phases.next(m.name + ": request overhead");
    // About a second of calls (at least 20, at most overhead_requests).
    const double per_call = m.batch_latency(1) + rt.seconds;
    const uint32_t calls = std::clamp<uint32_t>(
        static_cast<uint32_t>(1.0 / std::max(per_call, 1e-3)), 20,
        std::max(20u, o.overhead_requests));
    ModelOverhead mo = measure_model_overhead(engine, model_spec(o, m.name), image, calls);
    // The IO hold is at most the whole overhead: a disturbed burst must not make a lone
    // request slower than it was measured.
    double serial = std::min(std::max(preprocess_s[i], burst), mo.seconds);
    double rest = std::max(0.0, mo.seconds - serial);
    RequestOverhead& ro = profile.front_end.overheads[m.name];
    ro = {serial + rest / 2, rest / 2, serial, rt.client_seconds, mo.stddev,
          profile_image_name(o.image, o.models_dir)};
    if (std::isfinite(mo.idle_seconds))
      ro.idle_extra = std::max(0.0, mo.idle_seconds - mo.seconds);
    if (log) log(m.name + ": request overhead (round trip less load and compute) " +
                 std::to_string(mo.seconds * 1e3) + " ms (sd " +
                 std::to_string(mo.stddev * 1e3) + ", n=" + std::to_string(calls) +
                 "); after an idle server " + std::to_string(mo.idle_seconds * 1e3) + " ms");
    if (o.served_rounds > 0) phases.next(m.name + ": served extra");
    ro.served_extra =
        served_extra_of(o, engine, model_spec(o, m.name), m.batch_latency(1), image, log);
    if (o.served_miss_requests > 0) phases.next(m.name + ": served misses");
    served_miss_of(o, model_spec(o, m.name), image, ro, log);
  }
  if (o.served_idle_turns > 0) {
    phases.next("served idle slowdown");
    const ModelProfile& m = profile.costs.models[slowest_batch_of_one(profile.costs.models)];
    profile.idle_slowdown = served_idle_of(o, model_spec(o, m.name), m.batch_latency(1), image,
                                           profile.front_end.overheads[m.name], log);
  }
  phases.finish();
  profile.background_cores = background.cores();
  if (log) log_background(profile.background_cores, log);
  return profile;
}

}  // namespace servelab::experiments
