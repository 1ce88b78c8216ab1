// Batching policies called directly with hand-made views.
#include <catch2/catch.hpp>

#include "engine/control/policy_registry.h"

using namespace servelab;

namespace {

std::unique_ptr<BatchingPolicy> make(const std::string& name,
                                     std::map<std::string, std::string> p = {}) {
  return PolicyRegistry::batching({name, PolicyParams(std::move(p))}, ModelInfo{});
}

ModelView view(uint32_t queued, Time oldest = 0, uint32_t arrivals = 0, uint32_t max_batch = 128) {
  ModelView v;
  v.queued = queued;
  v.oldest_arrival = queued ? oldest : kNever;
  v.arrivals_in_quantum = arrivals;
  v.max_batch = max_batch;
  return v;
}

// The smallest queue length the policy finds ready: threshold t gives floor(t) + 1.
uint32_t ready_at(BatchingPolicy& p, uint32_t max_batch = 1000) {
  for (uint32_t q = 1; q <= max_batch; ++q)
    if (p.decide(view(q, 0, 0, max_batch), 0).size > 0) return q;
  return 0;
}

}  // namespace

TEST_CASE("none: one request a batch") {
  auto p = make("none");
  CHECK(p->decide(view(5), 0).size == 1);
  CHECK(p->decide(view(0), 0).size == 0);
}

TEST_CASE("fixed: waits for size, or max_wait when set") {
  auto p = make("fixed");
  CHECK(p->decide(view(7), 100).size == 0);
  CHECK(p->decide(view(7), 100).wait_until == kNever);
  CHECK(p->decide(view(8), 0).size == 8);
  auto w = make("fixed", {{"size", "4"}, {"max_wait", "0.25"}});
  CHECK(w->decide(view(2, 1.0), 1.1).wait_until == Approx(1.25));
  CHECK(w->decide(view(2, 1.0), 1.25).size == 4);
  // A head with a deadline waits no longer than it: the earlier of it and max_wait.
  ModelView due = view(7, 1.0);
  due.oldest_deadline = 1.5;
  CHECK(p->decide(due, 1.0).wait_until == 1.5);
  CHECK(p->decide(due, 1.49).size == 0);
  CHECK(p->decide(due, 1.5).size == 8);
  ModelView two = view(2, 1.0);
  two.oldest_deadline = 1.5;
  CHECK(w->decide(two, 1.0).wait_until == Approx(1.25));
  two.oldest_deadline = 1.125;
  CHECK(w->decide(two, 1.0).wait_until == 1.125);
  CHECK(w->decide(two, 1.125).size == 4);
}

TEST_CASE("max-delay: full batch at once, else at oldest + max_delay") {
  auto p = make("max-delay");  // model max batch, 5 ms
  BatchDecision d = p->decide(view(3, 1.0, 0, 16), 1.001);
  CHECK(d.size == 0);
  CHECK(d.wait_until == Approx(1.005));
  CHECK(p->decide(view(3, 1.0, 0, 16), 1.0 + 0.005).size == 16);
  CHECK(p->decide(view(16, 1.0, 0, 16), 1.0).size == 16);
  auto q = make("max-delay", {{"max_batch", "4"}});
  CHECK(q->decide(view(4, 1.0, 0, 16), 1.0).size == 4);
}

TEST_CASE("rafiqi-ewma: t = 0.5 t + 0.5 c per quantum, ready when queued > t") {
  auto p = make("rafiqi-ewma");
  CHECK(ready_at(*p) == 1);  // t = 0
  // c: 10 -> t = 5; 10 -> 7.5; 2 -> 4.75; 0 -> 2.375; 300 -> 128 (cap)
  struct Step { uint32_t c; uint32_t ready; };
  for (Step s : {Step{10, 6}, Step{10, 8}, Step{2, 5}, Step{0, 3}, Step{300, 129}}) {
    p->on_quantum(view(0, 0, s.c), 0);
    CHECK(ready_at(*p) == s.ready);
  }
  // A full batch is always ready even under a higher threshold.
  CHECK(p->decide(view(32, 0, 0, 32), 0).size == 32);
}

TEST_CASE("rafiqi-ewma alpha parameter") {
  auto p = make("rafiqi-ewma", {{"alpha", "0.75"}});
  p->on_quantum(view(0, 0, 8), 0);  // t = 0.25 * 8 = 2
  CHECK(ready_at(*p) == 3);
}

TEST_CASE("rafiqi-aimd: additive increase by the count, halving on falloff") {
  auto p = make("rafiqi-aimd");
  // c: 10 -> t = 10; 4 -> 5; 4 -> 2.5; 0 -> 1.25; 3 -> 4.25; 4 -> 4.25 (c == t? no: 4 < 4.25
  // halves to 2.125); 200 -> 128 (cap); 0 -> 64
  struct Step { uint32_t c; uint32_t ready; };
  for (Step s : {Step{10, 11}, Step{4, 6}, Step{4, 3}, Step{0, 2}, Step{3, 5}, Step{4, 3},
                 Step{200, 129}, Step{0, 65}}) {
    p->on_quantum(view(0, 0, s.c), 0);
    CHECK(ready_at(*p) == s.ready);
  }
}

TEST_CASE("rafiqi: quiet quanta given as a count decay the threshold as ticks one by one") {
  // Three quiet ticks: ewma 12 -> 6, 3, 1.5 (ready at 2); aimd 24 -> 12, 6, 3 (ready at 4).
  for (const char* n : {"rafiqi-ewma", "rafiqi-aimd"}) {
    auto counted = make(n);
    counted->on_quantum(view(0, 0, 24), 0);  // ewma: t = 0.5 * 24 = 12; aimd: t = 24
    auto one_by_one = make(n);
    one_by_one->on_quantum(view(0, 0, 24), 0);
    counted->on_quiet_quanta(3);
    for (int i = 0; i < 3; ++i) one_by_one->on_quantum(view(0, 0, 0), 0);
    CHECK(ready_at(*counted) == ready_at(*one_by_one));
    CHECK(ready_at(*counted) == (std::string(n) == "rafiqi-ewma" ? 2u : 4u));
    counted->on_quiet_quanta(100000);  // reaches 0, the quiet tick's fixed point
    CHECK(ready_at(*counted) == 1);
  }
  // An alpha that is not a power of two takes the step-by-step path: 0.75^k * 0.25 * 400.
  auto counted = make("rafiqi-ewma", {{"alpha", "0.75"}});
  auto one_by_one = make("rafiqi-ewma", {{"alpha", "0.75"}});
  counted->on_quantum(view(0, 0, 400), 0);  // t = 100
  one_by_one->on_quantum(view(0, 0, 400), 0);
  for (uint64_t k : {1, 2, 5}) {
    counted->on_quiet_quanta(k);
    for (uint64_t i = 0; i < k; ++i) one_by_one->on_quantum(view(0, 0, 0), 0);
    CHECK(ready_at(*counted) == ready_at(*one_by_one));
  }
  CHECK(ready_at(*counted) == 11);  // 100 * 0.75^8 = 10.01
}

TEST_CASE("rafiqi policies without ticks are greedy (event mode)") {
  for (const char* n : {"rafiqi-ewma", "rafiqi-aimd"}) {
    auto p = make(n);
    CHECK(p->decide(view(1, 0, 0, 64), 0).size == 64);
  }
}
