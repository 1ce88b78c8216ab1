// The controller's contract, checked where its actions are carried out: by the engine's
// control thread and by each simulated server alike. The monitor keeps the executor's view
// (which worker is busy with which model, which models are resident in which tier, how many
// loads run) and records a violation when an action breaks it:
//   - a dispatch to a busy or unknown worker, of an unknown model, with no requests, or of a
//     model not resident in the executing tier;
//   - more loads in flight than max_loads_in_flight;
//   - an eviction from the executing tier of a model a batch uses, or of one not resident.
// Request-level checks (a request finished twice) belong to whoever owns the requests.
// Not thread-safe: one owner, the thread that carries out the actions.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/control/controller.h"

namespace servelab {

class ContractMonitor {
 public:
  explicit ContractMonitor(const ControllerConfig& config);

  // A model the controller knows, resident in every tier up to `placed` (Disk: none above).
  void add_model(ModelId id, std::string name, Tier placed);
  void remove_model(ModelId id);

  // Checks a dispatch and marks its worker busy. False when it cannot be carried out at all
  // (unknown worker or model, no requests, worker busy): the caller drops it.
  bool on_dispatch(const Batch& b);
  void on_batch_done(WorkerId worker);
  void on_load(const LoadAction& l);
  void on_load_done(ModelId model, Tier to, bool ok);
  void on_evict(const EvictAction& e);

  bool resident(ModelId model, Tier t) const;
  uint32_t loads_in_flight() const { return loads_in_flight_; }
  // The first violations (at most 100 kept) and how many there were in all.
  const std::vector<std::string>& violations() const { return violations_; }
  uint64_t violation_count() const { return count_; }

 private:
  // What a dispatch and its batch's end check and change, a few bytes a model (a simulated
  // cluster of many servers keeps one a server and model); the names, for messages only,
  // apart.
  struct ModelState {
    bool known = false;
    uint32_t running = 0;  // batches of it on workers
    std::array<bool, kTierCount> resident{};
  };
  struct WorkerState {
    bool busy = false;
    ModelId model = 0;
  };

  void violation(std::string msg);
  [[gnu::cold, gnu::noinline]] bool refuse_dispatch(const Batch& b, bool worker_free);
  ModelState* model(ModelId id);

  Tier exec_tier_;
  uint32_t max_loads_;
  std::vector<WorkerState> workers_;
  std::vector<ModelState> models_;
  std::vector<std::string> names_;  // by model id
  uint32_t loads_in_flight_ = 0;
  std::vector<std::string> violations_;
  uint64_t count_ = 0;
};

}  // namespace servelab
