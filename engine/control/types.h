// Basic value types shared by the control plane, the engine and the simulator.
// Plain data, no behaviour; safe to copy between threads.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace servelab {

// Time in seconds. Virtual time in the simulator, seconds since engine start in the engine.
// The control plane never reads a clock: every event carries `now`.
using Time = double;
inline constexpr Time kNever = std::numeric_limits<double>::infinity();

using ModelId = uint32_t;    // dense index assigned by whoever registers models (O(1) lookup)
using RequestId = uint64_t;  // unique per request, assigned by the caller of on_arrival
using WorkerId = uint32_t;   // 0..workers-1
using BatchId = uint64_t;    // unique per dispatched batch, assigned by the controller

// Memory tiers, ordered from slowest to fastest. The executing tier is Host on CPU machines
// and Device on CUDA machines.
enum class Tier : uint8_t { Disk = 0, Host = 1, Device = 2 };
inline constexpr int kTierCount = 3;
const char* tier_name(Tier t);
bool parse_tier(const std::string& s, Tier* out);  // "disk" | "host" | "device"

enum class RequestStatus : uint8_t {
  Ok = 0,
  Timeout,      // still waiting (not dispatched) at arrival + request_timeout (Rafiqi 3.5)
  Rejected,     // per-model queue full on arrival
  Failed,       // execution or load failed, or model removed while queued
  Cancelled,    // cancelled by its client (Controller::cancel): removed from its queue, or
                // its batch's result discarded
  Dropped,      // still queued at its deadline, and the controller drops late requests
                // (ControllerConfig::drop_late): never computed
};
const char* status_name(RequestStatus s);

// A request as the control plane sees it: no payload (the engine keeps payloads by id).
struct Request {
  RequestId id = 0;
  ModelId model = 0;
  Time arrival = 0;
  Time deadline = kNever;  // SLO deadline (arrival + slo) used by deadline-aware policies
};

// What happened to one request, emitted with its completion. All times absolute.
struct RequestOutcome {
  Request request;
  RequestStatus status = RequestStatus::Ok;
  Time assigned = kNever;   // a worker was reserved for its batch (end of queueing)
  Time started = kNever;    // compute started (after any load it waited for)
  Time finished = kNever;   // completion time
  uint32_t batch_size = 0;  // size of the batch it ran in (0 if never dispatched)
  bool waited_for_load = false;  // its batch waited for a model load
  WorkerId worker = 0;
};

// Expected seconds of a batch of `batch` requests (one point of a cost curve).
struct BatchSeconds {
  uint32_t batch = 1;
  double seconds = 0;
};

// Weights a model shares with other models in the Host tier (a blob of the weight store,
// engine/store/): `key` names the blob, equal keys are the same bytes.
struct WeightPart {
  uint64_t key = 0;
  uint64_t bytes = 0;
};

// Static facts about a registered model, used for cache accounting and batching limits.
struct ModelInfo {
  std::string name;
  uint64_t size_bytes = 0;  // measured size in the executing tier (weights + workspace)
  uint32_t contexts = 1;    // batches of this model that may run at once (Rafiqi context pool)
  uint32_t max_batch = 0;   // 0: use the controller's max_batch
  // Expected seconds to load the model into tier t from the tier below (index: Tier); 0 where
  // unknown. A prior for eviction policies: the controller replaces it by each load it sees.
  double load_seconds[kTierCount] = {0, 0, 0};
  // Expected batch latencies, sorted by batch size, distinct sizes (e.g. the cost profile's
  // means); empty where unknown. A prior for SLO-aware batching policies (rafiki-greedy).
  std::vector<BatchSeconds> batch_seconds{};
  // Its weights that the Host tier holds once for every model using them (mapped blobs of the
  // weight store), part of size_bytes; the rest of size_bytes is its own. Empty: all its own.
  std::vector<WeightPart> host_parts{};
};

}  // namespace servelab
