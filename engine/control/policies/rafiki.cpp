// Rafiki's greedy SLO-aware batching (section 5.1, Algorithm 3), registered as rafiki-greedy.
//   queue >= max(B):  dispatch max(B) (lines 2-5)
//   otherwise:        b = max{b in B, b <= queue}; dispatch b once
//                     c(b) + w(q0) + delta >= tau (lines 7-8), i.e. at
//                     now >= arrival(q0) + tau - delta - c(b); until then ask to be woken then.
//   queue < min(B):   the leftovers wait for arrivals (section 7.2) until the head has waited
//                     tau; then the queue goes whole, overdue (waiting on only makes it later),
//                     so a lone request ends even when arrivals stop.
// Algorithm 3 is a loop that decides when its worker is free; the controller asks decide()
// again when a worker takes the model, so the batch size is the one for the queue then.
#include <algorithm>

#include "engine/control/policies/builtin.h"
#include "engine/control/cost_profile.h"

namespace servelab::detail {
namespace {

struct GreedySettings {
  std::vector<uint32_t> sizes{16, 32, 48, 64};  // B, sorted, distinct
  std::vector<BatchSeconds> costs;              // c(b) given as a parameter; empty: none
  Time slo = kNever;                            // tau; kNever: each head's deadline - arrival
  double delta = 0.1;                           // in units of tau
  bool partial = false;                         // queue < min(B): dispatch the whole queue
};

class RafikiGreedy final : public BatchingPolicy {
 public:
  RafikiGreedy(GreedySettings s, const ModelInfo& info)
      : s_(std::move(s)), costs_(s_.costs.empty() ? info.batch_seconds : s_.costs),
        measured_(costs_.empty()) {}

  BatchDecision decide(const ModelView& m, Time now) override {
    if (m.queued == 0) return {};
    const std::vector<uint32_t>& sizes = batch_sizes(m.max_batch);
    if (m.queued >= sizes.back()) return {sizes.back()};  // lines 2-5
    uint32_t b = largest_fitting(sizes, m.queued);       // line 7
    Time tau = s_.slo != kNever ? s_.slo : head_slo(m);
    if (tau == kNever) return {};
    if (b == 0) return leftovers(m, now, tau);
    Time due = m.oldest_arrival + tau - s_.delta * tau - cost(b);  // line 8
    if (now >= due) return {b};
    return {0, due};
  }

  // Without a cost prior, c(b) is the last measured latency of a batch of b.
  void on_batch_done(const ModelView&, uint32_t size, Time service_time, Time) override {
    if (measured_) record_batch_seconds(costs_, size, service_time);
  }

 private:
  // A queue below min(B) (without `partial`): whole once its head has waited tau.
  static BatchDecision leftovers(const ModelView& m, Time now, Time tau) {
    Time late = m.oldest_arrival + tau;
    if (now >= late) return {m.queued};
    return {0, late};
  }
  // B with sizes above the model's max batch replaced by it (kept for the last max batch).
  const std::vector<uint32_t>& batch_sizes(uint32_t max_batch) {
    max_batch = std::max(1u, max_batch);
    if (max_batch == capped_for_) return capped_;
    capped_.clear();
    for (uint32_t b : s_.sizes) capped_.push_back(std::min(b, max_batch));
    capped_.erase(std::unique(capped_.begin(), capped_.end()), capped_.end());
    capped_for_ = max_batch;
    return capped_;
  }
  // The largest size not above `queued`; with `partial`, the queue itself below min(B).
  uint32_t largest_fitting(const std::vector<uint32_t>& sizes, uint32_t queued) const {
    uint32_t b = 0;
    for (uint32_t size : sizes)
      if (size <= queued) b = size;
    return b == 0 && s_.partial ? queued : b;
  }
  double cost(uint32_t b) const {
    return costs_.empty() ? 0.0 : interpolate_batch_seconds(costs_, b);
  }

  GreedySettings s_;
  std::vector<BatchSeconds> costs_;
  bool measured_;
  std::vector<uint32_t> capped_;
  uint32_t capped_for_ = 0;  // max batch capped_ was made for; 0: none yet
};

// c(b) for each listed b, in the order of batch_sizes; empty when `costs` is absent.
std::vector<BatchSeconds> cost_list(const PolicyParams& p, const std::vector<uint32_t>& sizes) {
  std::vector<double> seconds = number_list(p, "costs", {});
  if (seconds.empty()) return {};
  if (seconds.size() != sizes.size())
    throw ConfigError("parameter 'costs' must give one latency (seconds) per batch size");
  std::vector<BatchSeconds> out;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (!(seconds[i] >= 0)) throw ConfigError("parameter 'costs' must be >= 0");
    out.push_back({sizes[i], seconds[i]});
  }
  std::sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.batch < b.batch; });
  auto same = [](auto& a, auto& b) { return a.batch == b.batch; };
  out.erase(std::unique(out.begin(), out.end(), same), out.end());
  return out;
}

GreedySettings greedy_settings(const PolicyParams& p) {
  check_keys(p, {"batch_sizes", "costs", "slo_ms", "delta", "partial"});
  GreedySettings s;
  s.sizes = batch_size_list(p);
  s.costs = cost_list(p, s.sizes);
  std::sort(s.sizes.begin(), s.sizes.end());
  s.sizes.erase(std::unique(s.sizes.begin(), s.sizes.end()), s.sizes.end());
  s.slo = slo_ms_param(p);
  s.delta = param_in(p, "delta", 0.1, 0, 1);
  s.partial = p.get_bool("partial", false);
  return s;
}

}  // namespace

void add_builtin_rafiki(PolicyTables& t) {
  t.batching["rafiki-greedy"] = {
      "Rafiki greedy SLO batching (Algorithm 3). batch_sizes B (list, default 16,32,48,64; "
      "sizes above the model's max batch become it): a queue >= max(B) dispatches max(B); "
      "otherwise b = the largest size in B <= queue, dispatched once c(b) + w(oldest) + "
      "delta*tau >= tau. tau: slo_ms, else each queue head's deadline - arrival (without "
      "either only full max(B) batches go). delta (fraction of tau, default 0.1). c(b): costs "
      "(list of seconds, one per batch size), else the model's cost profile, else the last "
      "measured batch of that size (0 before one). A queue below min(B) waits for more "
      "arrivals, as the paper reports its leftovers do (section 7.2), until its oldest "
      "request has waited tau, then goes whole (overdue); partial (bool, default false) "
      "dispatches the whole queue instead once the rule holds for c(queue).",
      [](const PolicyParams& p, const ModelInfo& info) {
        return std::make_unique<RafikiGreedy>(greedy_settings(p), info);
      }};
}

}  // namespace servelab::detail
