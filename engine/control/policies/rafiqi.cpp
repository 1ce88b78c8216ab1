// Rafiqi's adaptive per-model thresholds (section 3.3): at each quantum tick the threshold t
// is updated from c, the arrivals in the last quantum; the model is ready when more than t
// requests are queued (or a full batch is), and then takes up to max_batch.
//   rafiqi-ewma: t = alpha * t + (1 - alpha) * c
//   rafiqi-aimd: t += c when c > t (additive increase by the count); t /= 2 when c < t
// Both cap t at `cap`. In event mode (quantum = 0) there are no ticks, t stays at `initial`
// (default 0) and the policy degrades to greedy batching: ready whenever queued > t.
#include <algorithm>
#include <bit>
#include <cmath>

#include "engine/control/policies/builtin.h"

namespace servelab::detail {
namespace {

// A threshold decaying through quiet quanta would reach subnormal numbers, whose arithmetic
// costs a hundred times more. Below this it is 0 for every purpose: no queue length is under
// it, and it rounds away in the next update's sum.
constexpr double kNegligible = 1e-150;

// Halving k times, with the floor above: exact, since halving a normal number is. Called on
// every quiet stretch, so without a libm call where it can: 0 stays 0, and a product with
// 2^-k (a normal number for k < 1022) is the exact ldexp (both are exact or correctly rounded).
double halved(double t, uint64_t k) {
  if (t == 0) return 0;
  if (k >= 1100) return 0;  // 2^-1100 * DBL_MAX < kNegligible
  const double h = k < 1022 ? t * std::bit_cast<double>((uint64_t(1023 - k)) << 52)
                            : std::ldexp(t, -int(k));
  return h < kNegligible ? 0 : h;
}

struct EwmaRule {
  double alpha;
  double operator()(double t, double c) const { return alpha * t + (1 - alpha) * c; }
  bool quiet_halves() const { return alpha == 0.5; }  // alpha * t + 0 == t / 2 exactly
};

struct AimdRule {
  double operator()(double t, double c) const {
    if (c > t) return t + c;
    if (c < t) return t / 2;
    return t;
  }
  bool quiet_halves() const { return true; }  // c = 0 < t: t / 2; t = 0 stays 0 either way
};

template <class Rule>
class RafiqiThreshold final : public BatchingPolicy {
 public:
  RafiqiThreshold(Rule rule, double initial, double cap)
      : rule_(rule), t_(std::min(initial, cap)), cap_(cap) {}
  void on_quantum(const ModelView& m, Time) override { step(double(m.arrivals_in_quantum)); }
  // The same values as `count` steps with no arrivals: a quiet step never raises t (so the
  // cap does not bind), and 0 is its fixed point.
  void on_quiet_quanta(uint64_t count) override {
    if (rule_.quiet_halves()) t_ = halved(t_, count);
    else for (; count > 0 && t_ != 0; --count) step(0);
  }
  BatchDecision decide(const ModelView& m, Time) override {
    if (m.queued > 0 && (double(m.queued) > t_ || m.queued >= m.max_batch)) return {m.max_batch};
    return {};
  }
  bool observes_batches() const override { return false; }

 private:
  void step(double arrivals) {
    t_ = std::min(rule_(t_, arrivals), cap_);
    if (t_ < kNegligible) t_ = 0;
  }

  Rule rule_;
  double t_;
  double cap_;
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
        return std::make_unique<RafiqiThreshold<EwmaRule>>(
            EwmaRule{param_in(p, "alpha", 0.5, 0, 1)}, param_in(p, "initial", 0, 0, 1e12), cap);
      }};
  t.batching["rafiqi-aimd"] = {
      "Rafiqi adaptive threshold, AIMD: at each quantum t += c if c > t (c = arrivals in the "
      "last quantum), t /= 2 if c < t; ready when queued > t or queued >= max batch. cap "
      "(default 128), initial (default 0). Event mode: no ticks, t stays at initial.",
      [](const PolicyParams& p, const ModelInfo&) {
        check_keys(p, {"cap", "initial"});
        double cap = param_in(p, "cap", 128, 0, 1e12);
        return std::make_unique<RafiqiThreshold<AimdRule>>(
            AimdRule{}, param_in(p, "initial", 0, 0, 1e12), cap);
      }};
}

}  // namespace servelab::detail
