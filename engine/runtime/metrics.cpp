#include "engine/runtime/metrics.h"

#include <cmath>
#include <cstdio>

namespace servelab::runtime {
namespace {

std::vector<double> seconds_bounds() {
  return {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
}
std::vector<double> batch_bounds() { return {1, 2, 4, 8, 16, 32, 64, 128, 256}; }

std::string num(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

std::string escape(const std::string& s) {
  std::string r;
  for (char c : s) {
    if (c == '\\' || c == '"') r += '\\';
    if (c == '\n') { r += "\\n"; continue; }
    r += c;
  }
  return r;
}

void header(std::string& out, const char* name, const char* type, const char* help) {
  out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

}  // namespace

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double v) {
  size_t i = 0;
  while (i < bounds_.size() && v > bounds_[i]) ++i;
  ++counts_[i];
  sum_ += v;
  ++count_;
}

void Histogram::write(std::string& out, const std::string& name,
                      const std::string& labels) const {
  uint64_t cum = 0;
  std::string sep = labels.empty() ? "" : ",";
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    cum += counts_[i];
    double le = i < bounds_.size() ? bounds_[i] : INFINITY;
    out += name + "_bucket{" + labels + sep + "le=\"" + num(le) + "\"} " + std::to_string(cum) + "\n";
  }
  std::string l = labels.empty() ? "" : "{" + labels + "}";
  out += name + "_sum" + l + " " + num(sum_) + "\n";
  out += name + "_count" + l + " " + std::to_string(count_) + "\n";
}

ModelMetrics::ModelMetrics()
    : queue_s(seconds_bounds()), load_s(seconds_bounds()), compute_s(seconds_bounds()),
      batch_size(batch_bounds()) {}

ModelMetrics& EngineMetrics::model(ModelId id) {
  if (id >= models_.size()) models_.resize(id + 1);
  return models_[id];
}

std::string weight_metrics_text(const std::vector<std::string>& names,
                                const std::vector<store::WeightBytes>& weights) {
  std::string out;
  header(out, "servelab_model_weight_bytes", "gauge",
         "Bytes of a model's weights in the weight store: all of them (logical), those no other "
         "model uses (unique: what removing it frees) and those shared with other models.");
  for (size_t id = 0; id < names.size() && id < weights.size(); ++id) {
    if (names[id].empty()) continue;
    const std::string model = "model=\"" + escape(names[id]) + "\"";
    const store::WeightBytes& w = weights[id];
    out += "servelab_model_weight_bytes{" + model + ",kind=\"logical\"} " + std::to_string(w.logical) + "\n";
    out += "servelab_model_weight_bytes{" + model + ",kind=\"unique\"} " + std::to_string(w.unique) + "\n";
    out += "servelab_model_weight_bytes{" + model + ",kind=\"shared\"} " + std::to_string(w.shared) + "\n";
  }
  return out;
}

void time_split(const RequestOutcome& o, double* queue_s, double* load_s, double* compute_s) {
  auto span = [](Time a, Time b) { return std::isfinite(a) && std::isfinite(b) && b > a ? b - a : 0.0; };
  Time end_of_queue = std::isfinite(o.assigned) ? o.assigned : o.finished;
  *queue_s = span(o.request.arrival, end_of_queue);
  *load_s = span(o.assigned, o.started);
  *compute_s = span(o.started, o.finished);
}

void EngineMetrics::on_load(ModelId id, Tier to, const LoadParts& parts, Time end) {
  ModelMetrics& m = model(id);
  m.loads_total += parts;
  m.last_load[int(to)] = parts;
  m.last_load_end[int(to)] = end;
}

LoadParts EngineMetrics::load_parts(const RequestOutcome& o) const {
  LoadParts p;
  if (!o.waited_for_load || o.request.model >= models_.size()) return p;
  const ModelMetrics& m = models_[o.request.model];
  for (int t = 1; t < kTierCount; ++t)
    if (m.last_load_end[t] >= o.assigned && m.last_load_end[t] <= o.started) p += m.last_load[t];
  return p;
}

void EngineMetrics::on_outcome(const RequestOutcome& o) {
  ModelMetrics& m = model(o.request.model);
  if (o.request.deadline < kNever) {
    const bool met = o.status == RequestStatus::Ok && o.finished <= o.request.deadline;
    ++(met ? m.slo_met : m.slo_missed);
  }
  if (o.batch_size == 0) return;  // never dispatched (timeout, rejected, dropped, removed)
  double q, l, c;
  time_split(o, &q, &l, &c);
  m.queue_s.observe(q);
  m.load_s.observe(l);
  m.compute_s.observe(c);
}

std::string EngineMetrics::text(const std::vector<std::string>& names,
                                const ControllerStats& stats,
                                const std::vector<ModelState>& states) const {
  std::string out;
  auto label = [&](ModelId id) { return "model=\"" + escape(names[id]) + "\""; };
  auto per_model = [&](const char* name, const char* type, const char* help, auto value) {
    header(out, name, type, help);
    for (ModelId id = 0; id < names.size(); ++id)
      if (!names[id].empty())
        out += std::string(name) + "{" + label(id) + "} " + num(static_cast<double>(value(id))) + "\n";
  };
  auto counters = [&](ModelId id) {
    return id < stats.per_model.size() ? stats.per_model[id] : ModelCounters{};
  };
  per_model("servelab_requests_total", "counter", "Requests that arrived, per model.",
            [&](ModelId id) { return counters(id).arrivals; });
  per_model("servelab_requests_completed_total", "counter", "Requests answered Ok, per model.",
            [&](ModelId id) { return counters(id).completed; });
  header(out, "servelab_request_failures_total", "counter",
         "Requests not answered Ok, per model and reason (timeout, rejected, failed, dropped, cancelled).");
  for (ModelId id = 0; id < names.size(); ++id) {
    if (names[id].empty()) continue;
    ModelCounters c = counters(id);
    out += "servelab_request_failures_total{" + label(id) + ",reason=\"timeout\"} " + std::to_string(c.timeouts) + "\n";
    out += "servelab_request_failures_total{" + label(id) + ",reason=\"rejected\"} " + std::to_string(c.rejected) + "\n";
    out += "servelab_request_failures_total{" + label(id) + ",reason=\"failed\"} " + std::to_string(c.failed) + "\n";
    out += "servelab_request_failures_total{" + label(id) + ",reason=\"dropped\"} " + std::to_string(c.dropped) + "\n";
    out += "servelab_request_failures_total{" + label(id) + ",reason=\"cancelled\"} " + std::to_string(c.cancelled) + "\n";
  }
  per_model("servelab_batches_total", "counter", "Batches dispatched, per model.",
            [&](ModelId id) { return counters(id).batches; });
  per_model("servelab_cache_hits_total", "counter", "Batches whose model was resident in the executing tier.",
            [&](ModelId id) { return counters(id).hits; });
  per_model("servelab_cache_misses_total", "counter", "Batches that had to wait for a load.",
            [&](ModelId id) { return counters(id).misses; });
  per_model("servelab_model_loads_total", "counter", "Loads into a faster tier, per model.",
            [&](ModelId id) { return counters(id).loads; });
  per_model("servelab_model_evictions_total", "counter", "Evictions from a tier, per model.",
            [&](ModelId id) { return counters(id).evictions; });
  header(out, "servelab_slo_requests_total", "counter",
         "Requests with a deadline (SLO), per model: answered Ok by it (met) or not (missed).");
  for (ModelId id = 0; id < names.size(); ++id) {
    if (names[id].empty()) continue;
    const bool known = id < models_.size();
    out += "servelab_slo_requests_total{" + label(id) + ",outcome=\"met\"} " +
           std::to_string(known ? models_[id].slo_met : 0) + "\n";
    out += "servelab_slo_requests_total{" + label(id) + ",outcome=\"missed\"} " +
           std::to_string(known ? models_[id].slo_missed : 0) + "\n";
  }
  header(out, "servelab_slo_attainment", "gauge",
         "Fraction of the model's requests with a deadline answered Ok by it (NaN before any).");
  for (ModelId id = 0; id < names.size(); ++id) {
    if (names[id].empty()) continue;
    const uint64_t met = id < models_.size() ? models_[id].slo_met : 0;
    const uint64_t all = met + (id < models_.size() ? models_[id].slo_missed : 0);
    out += "servelab_slo_attainment{" + label(id) + "} " +
           (all ? num(double(met) / double(all)) : std::string("NaN")) + "\n";
  }
  per_model("servelab_queued_requests", "gauge", "Requests waiting in the model's queue.",
            [&](ModelId id) { return id < states.size() ? states[id].queued : 0u; });
  const struct { const char* name; const char* help; Histogram ModelMetrics::*h; } hists[] = {
      {"servelab_queue_seconds", "Time from arrival until a worker was assigned.", &ModelMetrics::queue_s},
      {"servelab_load_wait_seconds", "Time a batch waited for its model to load.", &ModelMetrics::load_s},
      {"servelab_compute_seconds", "Time of the batch's forward pass.", &ModelMetrics::compute_s},
      {"servelab_batch_size", "Size of dispatched batches.", &ModelMetrics::batch_size},
  };
  for (const auto& h : hists) {
    header(out, h.name, "histogram", h.help);
    for (ModelId id = 0; id < names.size() && id < models_.size(); ++id)
      if (!names[id].empty()) (models_[id].*h.h).write(out, h.name, label(id));
  }
  header(out, "servelab_model_load_seconds_total", "counter",
         "Seconds of the model's finished loads by phase: read (the file from disk), "
         "deserialize (the module built), copy (host to device), share (weight store blobs "
         "mapped and checked).");
  for (ModelId id = 0; id < names.size() && id < models_.size(); ++id) {
    if (names[id].empty()) continue;
    const LoadParts& p = models_[id].loads_total;
    const std::pair<const char*, double> phases[] = {
        {"read", p.read_s}, {"deserialize", p.deserialize_s}, {"copy", p.copy_s}, {"share", p.share_s}};
    for (const auto& [phase, s] : phases)
      out += "servelab_model_load_seconds_total{" + label(id) + ",phase=\"" + phase + "\"} " + num(s) + "\n";
  }
  header(out, "servelab_resident_bytes", "gauge", "Bytes of models resident per tier (accounted sizes).");
  for (int t = 0; t < kTierCount; ++t)
    out += std::string("servelab_resident_bytes{tier=\"") + tier_name(static_cast<Tier>(t)) + "\"} " +
           std::to_string(stats.resident_bytes[t]) + "\n";
  header(out, "servelab_resident_models", "gauge", "Models resident per tier.");
  for (int t = 0; t < kTierCount; ++t)
    out += std::string("servelab_resident_models{tier=\"") + tier_name(static_cast<Tier>(t)) + "\"} " +
           std::to_string(stats.resident_models[t]) + "\n";
  return out;
}

}  // namespace servelab::runtime
