// Cache accounting for one memory tier: budget (bytes and model count), the bytes and models
// reserved (resident plus loading), and the sorted list of resident models. In a tier that
// shares weight parts (Host: the weight store's mapped blobs) a part shared by several
// models is counted once, and a model frees only its unique bytes. It owns the
// tier's EvictionPolicy and keeps it informed. It does not decide what to load; the
// Controller does. Not thread-safe (owned by the Controller).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "engine/control/controller.h"
#include "engine/control/policy.h"
#include "engine/control/shared_parts.h"

namespace servelab {

class TierCache {
 public:
  TierCache() = default;
  // `shares_parts`: models' host_parts are held once in this tier.
  TierCache(TierBudget budget, std::unique_ptr<EvictionPolicy> eviction, bool shares_parts);

  const TierBudget& budget() const { return budget_; }
  uint64_t used_bytes() const { return used_bytes_; }
  uint32_t used_models() const { return used_models_; }
  // True when a model of `bytes` could never fit, even in an empty tier.
  bool too_big(uint64_t bytes) const;
  // True when `bytes` more (one more model) fit now without evicting anything.
  bool fits(uint64_t bytes) const;
  // True when `bytes` would fit after freeing `freeable_bytes` held by `freeable_models`.
  bool fits_after(uint64_t bytes, uint64_t freeable_bytes, uint32_t freeable_models) const;

  // Bytes holding `m` would add now, and bytes dropping it (held) would free now: its
  // unique bytes, what an eviction candidate's size is.
  uint64_t charge_of(const ModelInfo& m) const;
  uint64_t freed_by(const ModelInfo& m) const;
  // True when `m` would fit after every model of `dropped` (held, distinct) is dropped.
  bool fits_after_dropping(const ModelInfo& m, std::span<const ModelInfo* const> dropped) const;
  // Whether dropping one model may change what another frees (shared parts are held).
  bool shares_any() const { return shares_parts_ && parts_.any(); }

  // Space is held when a load starts (or a preloaded model is added) and dropped when the
  // evict is emitted or the load fails.
  void hold(const ModelInfo& m);
  void drop(const ModelInfo& m);

  // Residency changes; keep `residents()` sorted by ModelId and tell the eviction policy (of
  // uses only where the tier can evict).
  void became_resident(ModelId m, Time now);
  void left(ModelId m, Time now);
  void accessed(ModelId m, Time now);
  // Resident models in ModelId order (deterministic candidate order).
  const std::vector<ModelId>& residents() const { return residents_; }
  EvictionPolicy& eviction() { return *eviction_; }

 private:
  void reserve(uint64_t bytes);
  void release(uint64_t bytes);

  TierBudget budget_{};
  std::unique_ptr<EvictionPolicy> eviction_;
  bool shares_parts_ = false;
  SharedParts parts_;
  uint64_t used_bytes_ = 0;
  uint32_t used_models_ = 0;
  std::vector<ModelId> residents_;
};

}  // namespace servelab
