// Engine facade, model side: registration (load, check, measure, add to the controller),
// removal, status and metrics.
#include <algorithm>
#include <filesystem>
#include <utility>

#include "engine/runtime/engine_impl.h"
#include "engine/runtime/preprocess.h"

namespace servelab::runtime {
namespace {

void check_name(const std::string& name) {
  if (name.empty()) throw ModelError(400, "model name must not be empty");
  if (name.size() > 128)
    throw ModelError(400, "model name is longer than 128 characters");
  if (name == "." || name == "..") throw ModelError(400, "model name must not be '.' or '..'");
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-';
    if (!ok)
      throw ModelError(400, "model name '" + name +
                                "' may only contain letters, digits, '.', '_' and '-'");
  }
}

}  // namespace

ModelStatus Engine::Impl::status_of(const ModelEntry& e) {
  ModelState st = ctl->model_state(e.id);
  ModelStatus s;
  s.name = e.spec.name;
  s.file = e.spec.file;
  s.param_bytes = e.measure.param_bytes;
  s.weights = exec->weight_bytes(e.id);
  s.workspace_bytes = e.measure.workspace_bytes;
  s.size_bytes = e.size_bytes;
  s.check_recorded = e.measure.check_recorded;
  s.contexts = e.contexts;
  s.resident_host = st.resident[static_cast<int>(Tier::Host)];
  s.resident_device = st.resident[static_cast<int>(Tier::Device)];
  s.host_frees_bytes = st.frees_bytes[static_cast<int>(Tier::Host)];
  s.device_frees_bytes = st.frees_bytes[static_cast<int>(Tier::Device)];
  s.loading = st.loading;
  s.queued = st.queued;
  s.ref_count = st.ref_count;
  s.counters = st.counters;
  s.preprocess = e.spec.preprocess;
  s.slo = e.spec.slo;
  s.labels = e.spec.labels;
  s.batch_seconds = e.batch_seconds;
  return s;
}

// Reserves `spec.name` (409 when it is taken or being registered) and gives `entry` its id;
// ids are never reused, so late actions of a removed id stay harmless.
void Engine::Impl::reserve_name(const ModelSpec& spec, ModelEntry& entry) {
  std::unique_lock lock(reg_mu);
  if (by_name.count(spec.name) || registering.count(spec.name))
    throw ModelError(409, "a model named '" + spec.name + "' is already registered");
  registering.insert(spec.name);
  entry.id = next_id++;
}

void Engine::Impl::unreserve_name(const std::string& name) {
  std::unique_lock lock(reg_mu);
  registering.erase(name);
}

// What the controller knows of a measured model; the batch-cost prior of SLO-aware batching
// comes from the profile's entry for the model's file (else its name).
ModelInfo Engine::Impl::model_info(ModelEntry& entry) const {
  ModelInfo info;
  info.name = entry.spec.name;
  info.size_bytes = entry.size_bytes;
  info.contexts = entry.contexts;
  info.host_parts = exec->weight_parts(entry.id);
  const ModelProfile* prior =
      cost_priors.find(std::filesystem::path(entry.spec.file).stem().string());
  if (!prior) prior = cost_priors.find(entry.spec.name);
  if (prior) info.batch_seconds = entry.batch_seconds = prior->mean_batch_seconds();
  return info;
}

// Adds the model to the controller, resident in Host when the host budget has room (otherwise
// the host copy is dropped and the first batch loads it from disk). Returns the error that
// refuses it (a model larger than a whole tier's budget), empty on success.
std::string Engine::Impl::place(const ModelEntry& entry, const ModelInfo& info) {
  return query([&](Time) -> std::string {
    const auto& budgets = opts.control.budgets;
    for (int t = 1; t <= static_cast<int>(exec_tier); ++t)
      if (info.size_bytes > budgets[t].bytes || budgets[t].models == 0)
        return "model '" + info.name + "' needs " + std::to_string(info.size_bytes) +
               " bytes, more than the whole " + tier_name(static_cast<Tier>(t)) + " budget (" +
               std::to_string(budgets[t].bytes) + " bytes)";
    try {
      const Tier placed = ctl->add_model_where_it_fits(entry.id, info, Tier::Host);
      contract->add_model(entry.id, info.name, placed);
      if (placed == Tier::Disk) exec->evict(entry.id, Tier::Host);
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "";
  });
}

// Makes a placed model visible to requests by name and id.
void Engine::Impl::publish(const std::shared_ptr<ModelEntry>& entry) {
  std::unique_lock lock(reg_mu);
  registering.erase(entry->spec.name);
  by_name[entry->spec.name] = entry;
  if (by_id.size() <= entry->id) by_id.resize(entry->id + 1);
  by_id[entry->id] = entry;
}

ModelStatus Engine::register_model(const ModelSpec& spec) {
  Impl& s = *impl_;
  check_name(spec.name);
  try {
    validate_preprocess(spec.preprocess);
  } catch (const ImageError& e) {
    throw ModelError(400, "model '" + spec.name + "': " + e.what());
  }
  auto entry = std::make_shared<ModelEntry>();
  entry->spec = spec;
  entry->contexts = std::max<uint32_t>(1, spec.contexts ? spec.contexts : s.opts.default_contexts);
  s.reserve_name(spec, *entry);
  try {
    entry->measure = s.exec->add(entry->id, spec, s.opts.control.max_batch, entry->contexts);
  } catch (...) {
    s.unreserve_name(spec.name);
    throw;
  }
  entry->size_bytes = entry->measure.param_bytes + entry->measure.workspace_bytes;
  const std::string error = s.place(*entry, s.model_info(*entry));
  if (!error.empty()) {
    s.exec->remove(entry->id);
    s.unreserve_name(spec.name);
    throw ModelError(400, error);
  }
  s.publish(entry);
  return s.query([&](Time) { return s.status_of(*entry); });
}

bool Engine::unregister_model(const std::string& name) {
  Impl& s = *impl_;
  std::shared_ptr<const ModelEntry> entry;
  {
    std::unique_lock lock(s.reg_mu);
    auto it = s.by_name.find(name);
    if (it == s.by_name.end()) return false;
    entry = it->second;
    s.by_name.erase(it);
    s.by_id[entry->id] = nullptr;
  }
  s.query([&](Time now) {
    s.ctl->remove_model(entry->id, now, s.actions.out());
    s.contract->remove_model(entry->id);
  });
  // Batches already running hold the module; its evictions on the loader become no-ops.
  s.exec->remove(entry->id);
  return true;
}

std::shared_ptr<const ModelEntry> Engine::Impl::find(const std::string& name) const {
  std::shared_lock lock(reg_mu);
  auto it = by_name.find(name);
  return it == by_name.end() ? nullptr : it->second;
}

store::Tidied Engine::tidy_weight_store() { return impl_->exec->tidy_weight_store(); }

std::optional<ModelStatus> Engine::model(const std::string& name) const {
  Impl& s = *impl_;
  auto entry = s.find(name);
  if (!entry) return std::nullopt;
  return s.query([&](Time) { return s.status_of(*entry); });
}

std::vector<ModelStatus> Engine::models() const {
  Impl& s = *impl_;
  std::vector<std::shared_ptr<const ModelEntry>> entries;
  {
    std::shared_lock lock(s.reg_mu);
    for (const auto& e : s.by_id)
      if (e) entries.push_back(e);
  }
  return s.query([&](Time) {
    std::vector<ModelStatus> out;
    for (const auto& e : entries) out.push_back(s.status_of(*e));
    return out;
  });
}

void Engine::start_cache_trace() {
  Impl& s = *impl_;
  std::vector<ModelId> ids;
  {
    std::shared_lock lock(s.reg_mu);
    for (const auto& e : s.by_id)
      if (e) ids.push_back(e->id);
  }
  s.query([&](Time) {
    auto trace = std::make_unique<CacheTrace>();
    trace->tier = s.exec_tier;
    trace->room = s.opts.control.budgets[int(s.exec_tier)];
    for (ModelId id : ids)
      if (s.ctl->model_state(id).resident[int(s.exec_tier)]) trace->initial.push_back(id);
    s.cache_trace = std::move(trace);
  });
}

std::optional<CacheTrace> Engine::take_cache_trace() {
  Impl& s = *impl_;
  std::vector<uint64_t> sizes;
  {
    std::shared_lock lock(s.reg_mu);
    sizes.assign(s.by_id.size(), 0);
    for (const auto& e : s.by_id)
      if (e) sizes[e->id] = e->size_bytes;
  }
  std::unique_ptr<CacheTrace> trace =
      s.query([&](Time) { return std::exchange(s.cache_trace, nullptr); });
  const bool shares_parts = s.exec_tier == Tier::Host && !s.opts.weight_store.empty();
  if (!trace || shares_parts) return std::nullopt;
  trace->sizes = std::move(sizes);
  return std::move(*trace);
}

std::string Engine::metrics_text() const {
  Impl& s = *impl_;
  std::vector<std::string> names;
  {
    std::shared_lock lock(s.reg_mu);
    for (const auto& e : s.by_id) names.push_back(e ? e->spec.name : "");
  }
  std::vector<store::WeightBytes> weights;  // asked outside the control lock
  for (ModelId id = 0; id < names.size(); ++id)
    weights.push_back(names[id].empty() ? store::WeightBytes{} : s.exec->weight_bytes(id));
  const std::string weight_text = weight_metrics_text(names, weights);
  return weight_text + s.query([&](Time) {
    std::vector<ModelState> states;
    for (ModelId id = 0; id < names.size(); ++id)
      states.push_back(names[id].empty() ? ModelState{} : s.ctl->model_state(id));
    return s.metrics.text(names, s.ctl->stats(), states) +
           "# HELP servelab_contract_violations_total Controller actions that broke its contract "
           "(engine/control/contract_monitor.h).\n# TYPE servelab_contract_violations_total "
           "counter\nservelab_contract_violations_total " +
           std::to_string(s.contract->violation_count()) + "\n" +
           "# HELP servelab_images_decoded_total Request images decoded (a group's members that "
           "prepare images alike share one decode).\n# TYPE servelab_images_decoded_total "
           "counter\nservelab_images_decoded_total " +
           std::to_string(s.images_decoded.load()) + "\n";
  });
}

}  // namespace servelab::runtime
