// The weight parts one tier holds for its models, each once however many resident (or
// loading) models use it: what holding a model adds to the tier, and what dropping it frees
// (its unique bytes). A model without parts is all its own: it adds and frees size_bytes.
// Not thread-safe (owned by a TierCache).
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>

#include "engine/control/types.h"

namespace servelab {

class SharedParts {
 public:
  // Bytes of `m` that are not parts: its own weights and workspace.
  static uint64_t own_bytes(const ModelInfo& m);

  // Bytes holding `m` would add: its own bytes and the parts no held model has.
  uint64_t charge_of(const ModelInfo& m) const;
  // Bytes dropping `m` (held) would free: its own bytes and the parts only it holds.
  uint64_t freed_by(const ModelInfo& m) const;
  // Bytes dropping every model of `dropped` (all held, each once) would free together.
  uint64_t freed_by_all(std::span<const ModelInfo* const> dropped) const;
  // What holding `m` would add once every model of `dropped` is dropped.
  uint64_t charge_after(const ModelInfo& m, std::span<const ModelInfo* const> dropped) const;

  // Counts `m`'s parts as held; returns the bytes added (charge_of before the call).
  uint64_t hold(const ModelInfo& m);
  // Counts `m`'s parts as no longer held; returns the bytes freed (freed_by before the call).
  uint64_t drop(const ModelInfo& m);
  bool any() const { return !held_.empty(); }

 private:
  struct Held {
    uint64_t bytes = 0;
    uint32_t users = 0;
  };
  // Users of each part among `dropped`.
  std::unordered_map<uint64_t, uint32_t> users_among(std::span<const ModelInfo* const> dropped) const;
  std::unordered_map<uint64_t, Held> held_;  // parts with at least one user
};

}  // namespace servelab
