// Clipper's adaptive batching (NSDI'17, section 4.3), registered as clipper-aimd.
// AIMD on the batch size cap: after a full batch (size >= cap) whose latency stayed within the
// SLO, cap += step; after any batch that exceeded the SLO, cap *= (1 - backoff) (10%).
// Delayed batching: with delay > 0 a batch below the cap waits until the oldest request has
// waited `delay` (Clipper's batch timeout); with delay = 0 whatever is queued goes at once.
#include <algorithm>

#include "engine/control/policies/builtin.h"

namespace servelab::detail {
namespace {

struct ClipperSettings {
  Time slo = kNever;  // kNever: taken from the requests' deadlines
  double initial = 1;
  double step = 1;
  double backoff = 0.1;
  Time delay = 0;
};

class ClipperAimd final : public BatchingPolicy {
 public:
  explicit ClipperAimd(const ClipperSettings& s) : s_(s), size_(s.initial), slo_(s.slo) {}

  BatchDecision decide(const ModelView& m, Time now) override {
    note_slo(m);
    return delayed_batch(m, now, cap(m), s_.delay);
  }

  void on_batch_done(const ModelView& m, uint32_t size, Time service_time, Time) override {
    note_slo(m);
    if (slo_ == kNever) return;  // no objective known yet: keep the cap
    if (service_time > slo_) {
      size_ = std::max(1.0, size_ * (1 - s_.backoff));
    } else if (size >= cap(m)) {  // a smaller batch says nothing about the cap's latency
      size_ = std::min(size_ + s_.step, double(m.max_batch));
    }
  }

 private:
  uint32_t cap(const ModelView& m) const {
    return std::clamp(uint32_t(size_), 1u, std::max(1u, m.max_batch));
  }
  // Without slo_ms, the objective is the SLO of the latest queue head that had a deadline.
  void note_slo(const ModelView& m) {
    if (s_.slo != kNever) return;
    if (Time head = head_slo(m); head != kNever) slo_ = head;
  }

  ClipperSettings s_;
  double size_;  // the AIMD cap, fractional between steps
  Time slo_;
};

ClipperSettings clipper_settings(const PolicyParams& p) {
  check_keys(p, {"slo_ms", "initial", "step", "backoff", "delay"});
  ClipperSettings s;
  s.slo = slo_ms_param(p);
  s.initial = param_in(p, "initial", 1, 1, 1 << 20);
  s.step = param_in(p, "step", 1, 0, 1 << 20);
  s.backoff = param_in(p, "backoff", 0.1, 0, 0.99);
  s.delay = non_negative(p, "delay", 0);
  return s;
}

}  // namespace

void add_builtin_clipper(PolicyTables& t) {
  t.batching["clipper-aimd"] = {
      "Clipper AIMD batching (NSDI'17 4.3). The batch cap starts at initial (default 1); "
      "after a full batch (size >= cap) whose latency stayed <= the SLO it grows by step "
      "(default 1), after any batch slower than the SLO it shrinks by the fraction backoff "
      "(default 0.1), never below 1 or above the model's max batch. slo_ms (default: each "
      "request's deadline - arrival, the latest queue head's; without either the cap stays). "
      "delay (seconds, default 0): delayed batching, a batch below the cap waits until the "
      "oldest request has waited this long; 0 dispatches whatever is queued.",
      [](const PolicyParams& p, const ModelInfo&) {
        return std::make_unique<ClipperAimd>(clipper_settings(p));
      }};
}

}  // namespace servelab::detail
