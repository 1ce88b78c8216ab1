// Batching policies without adaptation: none, gre (the GPU REST Engine baseline), fixed size,
// and max-delay (Triton's dynamic batcher).
#include <algorithm>

#include "engine/control/policies/builtin.h"

namespace servelab::detail {
namespace {

// One request a batch, ready as soon as anything is queued (in quantum mode: at a tick).
class NoBatching final : public BatchingPolicy {
 public:
  BatchDecision decide(const ModelView& m, Time) override { return {m.queued > 0 ? 1u : 0u}; }
  bool observes_batches() const override { return false; }
  bool stateless() const override { return true; }
};

// NVIDIA's GPU REST Engine: one request a batch, served as soon as it arrives and a worker
// is free, with no quantum even where the controller runs one for the other models.
class GpuRestEngine final : public BatchingPolicy {
 public:
  BatchDecision decide(const ModelView& m, Time) override { return {m.queued > 0 ? 1u : 0u}; }
  bool observes_batches() const override { return false; }
  bool stateless() const override { return true; }
  bool decides_on_events() const override { return true; }
};

// Ready when `size` requests are queued; also (a partial batch) when the oldest request has
// waited max_wait (> 0), or has reached its deadline: waiting longer only makes it later, and
// a lone request ends even when arrivals stop. Quantum mode ignores wait_until: it asks at
// ticks.
class FixedBatching final : public BatchingPolicy {
 public:
  FixedBatching(uint32_t size, Time max_wait) : size_(size), max_wait_(max_wait) {}
  BatchDecision decide(const ModelView& m, Time now) override {
    if (m.queued >= size_) return {size_};
    if (m.queued == 0) return {};
    const Time due = std::min(max_wait_ > 0 ? m.oldest_arrival + max_wait_ : kNever,
                              m.oldest_deadline);
    if (due == kNever) return {};
    if (now >= due) return {size_};
    return {0, due};
  }
  bool observes_batches() const override { return false; }
  bool stateless() const override { return true; }

 private:
  uint32_t size_;
  Time max_wait_;
};

// Ready when max_batch are queued or the oldest request has waited max_delay; otherwise
// asks to be woken at oldest + max_delay.
class MaxDelayBatching final : public BatchingPolicy {
 public:
  MaxDelayBatching(uint32_t max_batch, Time max_delay)
      : max_batch_(max_batch), max_delay_(max_delay) {}
  BatchDecision decide(const ModelView& m, Time now) override {
    uint32_t cap = max_batch_ ? std::min(max_batch_, m.max_batch) : m.max_batch;
    return delayed_batch(m, now, cap, max_delay_);
  }
  bool observes_batches() const override { return false; }
  bool stateless() const override { return true; }

 private:
  uint32_t max_batch_;  // 0: the model's max batch
  Time max_delay_;
};

}  // namespace

void add_builtin_batching(PolicyTables& t) {
  t.batching["none"] = {
      "One request a batch, dispatched as soon as a worker is free; under a quantum "
      "(engine.quantum_ms > 0) decided at the ticks like every other policy. No parameters.",
      [](const PolicyParams& p, const ModelInfo&) {
        check_keys(p, {});
        return std::make_unique<NoBatching>();
      }};
  t.batching["gre"] = {
      "NVIDIA's GPU REST Engine (Rafiqi figure 5's baseline): one request a batch, served as "
      "soon as it arrives and a worker is free, without batching and without waiting for a "
      "quantum tick even when engine.quantum_ms > 0. No parameters.",
      [](const PolicyParams& p, const ModelInfo&) {
        check_keys(p, {});
        return std::make_unique<GpuRestEngine>();
      }};
  t.batching["fixed"] = {
      "Fixed-size batches. size (int, default 8): ready when this many are queued. "
      "max_wait (seconds, default 0 = no limit): when > 0, also dispatch a partial batch "
      "once the oldest request has waited this long. A partial batch also goes once the "
      "oldest request reaches its deadline (SLO), if it has one.",
      [](const PolicyParams& p, const ModelInfo&) {
        check_keys(p, {"size", "max_wait"});
        return std::make_unique<FixedBatching>(uint32_t(positive_int(p, "size", 8)),
                                               non_negative(p, "max_wait", 0));
      }};
  t.batching["max-delay"] = {
      "Triton-style dynamic batching. max_batch (int, default 0 = the model's max batch): "
      "dispatch when this many are queued. max_delay (seconds, default 0.005): dispatch "
      "whatever is queued once the oldest request has waited this long.",
      [](const PolicyParams& p, const ModelInfo&) {
        check_keys(p, {"max_batch", "max_delay"});
        long long mb = p.get_int("max_batch", 0);
        if (mb < 0) throw ConfigError("parameter 'max_batch' must be >= 0");
        return std::make_unique<MaxDelayBatching>(uint32_t(mb), non_negative(p, "max_delay", 0.005));
      }};
}

}  // namespace servelab::detail
