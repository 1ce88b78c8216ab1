#include "engine/control/tier_cache.h"

#include <algorithm>
#include <cassert>

namespace servelab {

TierCache::TierCache(TierBudget budget, std::unique_ptr<EvictionPolicy> eviction,
                     bool shares_parts)
    : budget_(budget), eviction_(std::move(eviction)), shares_parts_(shares_parts) {}

bool TierCache::too_big(uint64_t bytes) const {
  return bytes > budget_.bytes || budget_.models == 0;
}

bool TierCache::fits(uint64_t bytes) const { return fits_after(bytes, 0, 0); }

bool TierCache::fits_after(uint64_t bytes, uint64_t freeable_bytes,
                           uint32_t freeable_models) const {
  assert(freeable_bytes <= used_bytes_ && freeable_models <= used_models_);
  uint64_t used = used_bytes_ - freeable_bytes;
  uint32_t models = used_models_ - freeable_models;
  return bytes <= budget_.bytes && used <= budget_.bytes - bytes && models < budget_.models;
}

uint64_t TierCache::charge_of(const ModelInfo& m) const {
  return shares_parts_ ? parts_.charge_of(m) : m.size_bytes;
}

uint64_t TierCache::freed_by(const ModelInfo& m) const {
  return shares_parts_ ? parts_.freed_by(m) : m.size_bytes;
}

bool TierCache::fits_after_dropping(const ModelInfo& m,
                                    std::span<const ModelInfo* const> dropped) const {
  uint64_t freed = 0;
  uint64_t needed = m.size_bytes;
  if (shares_parts_) {
    freed = parts_.freed_by_all(dropped);
    needed = parts_.charge_after(m, dropped);
  } else {
    for (const ModelInfo* d : dropped) freed += d->size_bytes;
  }
  return fits_after(needed, freed, uint32_t(dropped.size()));
}

void TierCache::hold(const ModelInfo& m) {
  reserve(charge_of(m));
  if (shares_parts_) parts_.hold(m);
}

void TierCache::drop(const ModelInfo& m) {
  release(freed_by(m));
  if (shares_parts_) parts_.drop(m);
}

void TierCache::reserve(uint64_t bytes) {
  assert(fits(bytes));
  used_bytes_ += bytes;
  ++used_models_;
}

void TierCache::release(uint64_t bytes) {
  assert(used_bytes_ >= bytes && used_models_ > 0);
  used_bytes_ -= bytes;
  --used_models_;
}

void TierCache::became_resident(ModelId m, Time now) {
  auto it = std::lower_bound(residents_.begin(), residents_.end(), m);
  assert(it == residents_.end() || *it != m);
  residents_.insert(it, m);
  eviction_->on_load(m, now);
}

void TierCache::left(ModelId m, Time now) {
  auto it = std::lower_bound(residents_.begin(), residents_.end(), m);
  assert(it != residents_.end() && *it == m);
  residents_.erase(it);
  eviction_->on_unload(m, now);
}

// A tier with room for everything never evicts, so its policy's order is never asked for; a
// use then touches none of the policy's per-model state (a cache line per model and tier,
// which a simulated cluster of many servers would miss on every request).
void TierCache::accessed(ModelId m, Time now) {
  if (!budget_.unlimited()) eviction_->on_access(m, now);
}

}  // namespace servelab
