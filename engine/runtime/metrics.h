// Engine metrics kept under the control lock (request time split and batch sizes per model)
// and their Prometheus text exposition together with the controller's counters.
// Not thread-safe: used only by the holder of the engine's control lock (engine_impl.h).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/control/controller.h"
#include "engine/runtime/load_parts.h"
#include "engine/store/weight_bytes.h"

namespace servelab::runtime {

// A Prometheus histogram with fixed upper bounds (cumulative buckets written on output).
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void observe(double v);
  // Appends `name_bucket{labels,le=...}`, `name_sum{labels}` and `name_count{labels}` lines.
  void write(std::string& out, const std::string& name, const std::string& labels) const;
  uint64_t count() const { return count_; }

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // per bucket, plus +Inf last
  double sum_ = 0;
  uint64_t count_ = 0;
};

struct ModelMetrics {
  ModelMetrics();
  Histogram queue_s, load_s, compute_s, batch_size;
  // Requests with a deadline (an SLO): answered Ok by it, and all others (late, dropped,
  // timed out, failed); attainment is met / (met + missed).
  uint64_t slo_met = 0, slo_missed = 0;
  LoadParts loads_total;  // every finished load's phases
  // The last finished load into each tier: its phases and when it ended.
  std::array<LoadParts, kTierCount> last_load{};
  std::array<Time, kTierCount> last_load_end{-kNever, -kNever, -kNever};
};

class EngineMetrics {
 public:
  // Grows to cover `id`; returns its metrics.
  ModelMetrics& model(ModelId id);
  // Records one finished request from its outcome: its time split when it ran, its SLO
  // outcome when it had a deadline.
  void on_outcome(const RequestOutcome& o);
  void on_dispatch(ModelId id, uint32_t batch_size) { model(id).batch_size.observe(batch_size); }
  // Records a finished load of model `id` into `to`, ended at `end`.
  void on_load(ModelId id, Tier to, const LoadParts& parts, Time end);
  // Records a batch's private load (EngineOptions::private_weights) in the load phases' sums.
  void on_private_load(ModelId id, const LoadParts& parts) { model(id).loads_total += parts; }
  // The phases of the loads a request's batch waited for: those of its model that ended
  // between the batch's assignment and its start (zero for a batch that found it resident).
  LoadParts load_parts(const RequestOutcome& o) const;

  // Prometheus text: `names[id]` is the model name ("" for ids to leave out).
  std::string text(const std::vector<std::string>& names, const ControllerStats& stats,
                   const std::vector<ModelState>& states) const;

 private:
  std::vector<ModelMetrics> models_;
};

// Splits an outcome into queue / load wait / compute seconds (zeros where not applicable).
// Gauges of each model's shared weights (a weight store): logical, unique and shared bytes,
// servelab_model_weight_bytes{model,kind}. weights[id] belongs to names[id] ("" : none).
std::string weight_metrics_text(const std::vector<std::string>& names,
                                const std::vector<store::WeightBytes>& weights);

void time_split(const RequestOutcome& o, double* queue_s, double* load_s, double* compute_s);

}  // namespace servelab::runtime
