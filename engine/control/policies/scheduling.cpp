// Scheduling policies: which ready model a free worker serves. Ties go to the lowest ModelId.
//   lru-order:    least recently dispatched model first (Rafiqi's fairness order).
//   oldest-first: the model whose queue head arrived first.
//   edf:          earliest head deadline first, ties by oldest head.

#include "engine/control/policies/builtin.h"

namespace servelab::detail {
namespace {

// The candidate of least key; the controller orders ready models by the same key.
template <class KeyOf>
class MinBy final : public SchedulingPolicy {
 public:
  size_t pick(std::span<const ModelView> c, Time) override {
    size_t best = 0;
    for (size_t i = 1; i < c.size(); ++i)
      if (KeyOf{}(c[i]) < KeyOf{}(c[best])) best = i;
    return best;
  }
  bool key(const ModelView& v, Key* out) const override {
    *out = KeyOf{}(v);
    return true;
  }
};

using Key = SchedulingPolicy::Key;
struct LastDispatch {
  Key operator()(const ModelView& v) const { return {v.last_dispatch, 0, v.model}; }
};
struct OldestHead {
  Key operator()(const ModelView& v) const { return {v.oldest_arrival, 0, v.model}; }
};
struct Deadline {
  Key operator()(const ModelView& v) const { return {v.oldest_deadline, v.oldest_arrival, v.model}; }
};

}  // namespace

void add_builtin_scheduling(PolicyTables& t) {
  t.scheduling["lru-order"] = {
      "Least recently dispatched model first (Rafiqi 3.2: fairness under load). No parameters.",
      [](const PolicyParams& p) {
        check_keys(p, {});
        return std::make_unique<MinBy<LastDispatch>>();
      }};
  t.scheduling["oldest-first"] = {"Model with the oldest queued request first. No parameters.",
                                  [](const PolicyParams& p) {
                                    check_keys(p, {});
                                    return std::make_unique<MinBy<OldestHead>>();
                                  }};
  t.scheduling["edf"] = {
      "Earliest deadline first: model whose oldest request has the earliest SLO deadline, "
      "ties by oldest arrival. No parameters.",
      [](const PolicyParams& p) {
        check_keys(p, {});
        return std::make_unique<MinBy<Deadline>>();
      }};
}

}  // namespace servelab::detail
