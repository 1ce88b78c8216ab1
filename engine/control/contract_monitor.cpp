#include "engine/control/contract_monitor.h"

#include <utility>

namespace servelab {

namespace {
constexpr size_t kKeptViolations = 100;
}  // namespace

ContractMonitor::ContractMonitor(const ControllerConfig& config)
    : exec_tier_(config.exec_tier), max_loads_(config.max_loads_in_flight),
      workers_(config.workers) {}

[[gnu::cold]] void ContractMonitor::violation(std::string msg) {
  ++count_;
  if (violations_.size() < kKeptViolations) violations_.push_back(std::move(msg));
}

ContractMonitor::ModelState* ContractMonitor::model(ModelId id) {
  return id < models_.size() && models_[id].known ? &models_[id] : nullptr;
}

void ContractMonitor::add_model(ModelId id, std::string name, Tier placed) {
  if (id >= models_.size()) {
    models_.resize(id + 1);
    names_.resize(id + 1);
  }
  ModelState& m = models_[id];
  m = ModelState{};
  names_[id] = std::move(name);
  m.known = true;
  for (int t = int(Tier::Disk); t <= int(placed); ++t) m.resident[t] = true;
}

void ContractMonitor::remove_model(ModelId id) {
  if (id < models_.size()) models_[id].known = false;
}

bool ContractMonitor::resident(ModelId id, Tier t) const {
  return id < models_.size() && models_[id].known && models_[id].resident[int(t)];
}

// Once per batch: the checks inline, the messages out of line (cold).
bool ContractMonitor::on_dispatch(const Batch& b) {
  const bool worker_free = b.worker < workers_.size() && !workers_[b.worker].busy;
  ModelState* m = model(b.model);
  if (!worker_free || !m || b.requests.empty()) [[unlikely]]
    return refuse_dispatch(b, worker_free);
  if (!m->resident[int(exec_tier_)]) [[unlikely]]
    violation("batch " + std::to_string(b.id) + " of model " + names_[b.model] +
              " dispatched while not resident in the executing tier");
  workers_[b.worker] = {true, b.model};
  ++m->running;
  return true;
}

bool ContractMonitor::refuse_dispatch(const Batch& b, bool worker_free) {
  const std::string batch = "batch " + std::to_string(b.id);
  if (!worker_free)
    violation(batch + " dispatched to busy or unknown worker " + std::to_string(b.worker));
  else
    violation(batch + " has an unknown model or no requests");
  return false;
}

void ContractMonitor::on_batch_done(WorkerId worker) {
  if (worker >= workers_.size() || !workers_[worker].busy) [[unlikely]] {
    violation("worker " + std::to_string(worker) + " finished a batch it was not running");
    return;
  }
  WorkerState& w = workers_[worker];
  w.busy = false;
  if (w.model < models_.size() && models_[w.model].running > 0) --models_[w.model].running;
}

void ContractMonitor::on_load(const LoadAction& l) {
  if (++loads_in_flight_ > max_loads_)
    violation("more than max_loads_in_flight (" + std::to_string(max_loads_) + ") loads");
  if (!model(l.model)) violation("load of unknown model " + std::to_string(l.model));
}

void ContractMonitor::on_load_done(ModelId id, Tier to, bool ok) {
  if (loads_in_flight_ > 0) --loads_in_flight_;
  if (ModelState* m = model(id); m && ok) m->resident[int(to)] = true;
}

void ContractMonitor::on_evict(const EvictAction& e) {
  ModelState* m = model(e.model);
  if (!m) return;  // removed while the eviction was on its way
  if (e.tier == exec_tier_) {
    const std::string& name = names_[e.model];
    if (m->running > 0) violation("model " + name + " evicted while a batch uses it");
    if (!m->resident[int(e.tier)]) violation("model " + name + " evicted while not resident");
  }
  m->resident[int(e.tier)] = false;
}

}  // namespace servelab
