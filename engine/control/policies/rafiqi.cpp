// Rafiqi's adaptive per-model thresholds (section 3.3): at each quantum tick the threshold t
// is updated from c, the arrivals in the last quantum; the model is ready when more than t
// requests are queued (or a full batch is), and then takes up to max_batch.
//   rafiqi-ewma: t = alpha * t + (1 - alpha) * c
//   rafiqi-aimd: t += c when c > t (additive increase by the count); t /= 2 when c < t
// Both cap t at `cap`. In event mode (quantum = 0) there are no ticks, t stays at `initial`
// (default 0) and the policy degrades to greedy batching: ready whenever queued > t.
#include <algorithm>

#include "engine/control/policies/builtin.h"

namespace servelab::detail {
namespace {

class RafiqiThreshold : public BatchingPolicy {
 public:
  RafiqiThreshold(double initial, double cap) : t_(std::min(initial, cap)), cap_(cap) {}
  void on_quantum(const ModelView& m, Time) override { step(double(m.arrivals_in_quantum)); }
  void on_quiet_quanta(uint64_t count) override {
    for (; count > 0 && t_ != 0; --count) step(0);  // 0 is the fixed point of a quiet tick
  }
  BatchDecision decide(const ModelView& m, Time) override {
    if (m.queued > 0 && (double(m.queued) > t_ || m.queued >= m.max_batch)) return {m.max_batch};
    return {};
  }

 protected:
  virtual double update(double t, double c) const = 0;

 private:
  void step(double arrivals) {
    t_ = std::min(update(t_, arrivals), cap_);
    // A threshold decaying through quiet quanta would reach subnormal numbers, whose
    // arithmetic costs a hundred times more. Below 1e-150 it is 0 for every purpose: no queue
    // length is under it, and it rounds away in the next update's sum.
    if (t_ < 1e-150) t_ = 0;
  }

  double t_;
  double cap_;
};

class RafiqiEwma final : public RafiqiThreshold {
 public:
  RafiqiEwma(double alpha, double initial, double cap) : RafiqiThreshold(initial, cap), alpha_(alpha) {}

 protected:
  double update(double t, double c) const override { return alpha_ * t + (1 - alpha_) * c; }

 private:
  double alpha_;
};

class RafiqiAimd final : public RafiqiThreshold {
 public:
  using RafiqiThreshold::RafiqiThreshold;

 protected:
  double update(double t, double c) const override {
    if (c > t) return t + c;
    if (c < t) return t / 2;
    return t;
  }
};

}  // namespace

void add_builtin_rafiqi(PolicyTables& t) {
  t.batching["rafiqi-ewma"] = {
      "Rafiqi adaptive threshold, exponential averaging: at each quantum t = alpha*t + "
      "(1-alpha)*c, c = arrivals in the last quantum; ready when queued > t or queued >= max "
      "batch; batch up to max batch. alpha (default 0.5, in [0,1]), cap (default 128), "
      "initial (default 0). Event mode: no ticks, t stays at initial.",
      [](const PolicyParams& p, const ModelInfo&) {
        check_keys(p, {"alpha", "cap", "initial"});
        double cap = param_in(p, "cap", 128, 0, 1e12);
        return std::make_unique<RafiqiEwma>(param_in(p, "alpha", 0.5, 0, 1),
                                            param_in(p, "initial", 0, 0, 1e12), cap);
      }};
  t.batching["rafiqi-aimd"] = {
      "Rafiqi adaptive threshold, AIMD: at each quantum t += c if c > t (c = arrivals in the "
      "last quantum), t /= 2 if c < t; ready when queued > t or queued >= max batch. cap "
      "(default 128), initial (default 0). Event mode: no ticks, t stays at initial.",
      [](const PolicyParams& p, const ModelInfo&) {
        check_keys(p, {"cap", "initial"});
        double cap = param_in(p, "cap", 128, 0, 1e12);
        return std::make_unique<RafiqiAimd>(param_in(p, "initial", 0, 0, 1e12), cap);
      }};
}

}  // namespace servelab::detail
