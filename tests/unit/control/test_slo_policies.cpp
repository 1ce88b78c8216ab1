// SLO-aware batching policies called directly with hand-made views: clipper-aimd's AIMD cap
// and delayed batching, rafiki-greedy's Algorithm 3 rule, and their parameter checks.
#include <catch2/catch.hpp>

#include "engine/control/policy_registry.h"

using namespace servelab;

namespace {

std::unique_ptr<BatchingPolicy> make(const std::string& name,
                                     std::map<std::string, std::string> p = {},
                                     const ModelInfo& info = ModelInfo{}) {
  return PolicyRegistry::batching({name, PolicyParams(std::move(p))}, info);
}

ModelView view(uint32_t queued, Time oldest = 0, uint32_t max_batch = 128,
               Time deadline = kNever) {
  ModelView v;
  v.queued = queued;
  v.oldest_arrival = queued ? oldest : kNever;
  v.oldest_deadline = queued ? deadline : kNever;
  v.max_batch = max_batch;
  return v;
}

// The cap clipper-aimd offers when plenty is queued.
uint32_t cap(BatchingPolicy& p, uint32_t max_batch = 128) {
  return p.decide(view(1000, 0, max_batch), 0).size;
}

}  // namespace

TEST_CASE("clipper-aimd: +step after a full batch within the SLO and -10% after a slow one") {
  auto p = make("clipper-aimd", {{"slo_ms", "100"}});
  CHECK(cap(*p) == 1);
  p->on_batch_done(view(0), 1, 0.05, 0);  // full, fast: 1 -> 2
  CHECK(cap(*p) == 2);
  p->on_batch_done(view(0), 1, 0.05, 0);  // not full: stays 2
  CHECK(cap(*p) == 2);
  p->on_batch_done(view(0), 2, 0.10, 0);  // at the SLO counts as within: 3
  CHECK(cap(*p) == 3);
  p->on_batch_done(view(0), 3, 0.2, 0);   // slow: 3 * 0.9 = 2.7
  CHECK(cap(*p) == 2);
  p->on_batch_done(view(0), 2, 0.05, 0);  // 3.7
  CHECK(cap(*p) == 3);
  p->on_batch_done(view(0, 0, 4), 3, 0.05, 0);  // 4.7, held at the model's max batch 4
  CHECK(cap(*p, 4) == 4);
  p->on_batch_done(view(0, 0, 4), 4, 0.05, 0);
  CHECK(cap(*p, 4) == 4);
}

TEST_CASE("clipper-aimd: never below one") {
  auto p = make("clipper-aimd", {{"slo_ms", "10"}, {"backoff", "0.5"}});
  for (int i = 0; i < 5; ++i) p->on_batch_done(view(0), 1, 1.0, 0);
  CHECK(cap(*p) == 1);
}

TEST_CASE("clipper-aimd: the SLO comes from the queue head's deadline without slo_ms") {
  auto p = make("clipper-aimd", {{"initial", "4"}});
  p->on_batch_done(view(0), 4, 5.0, 0);  // no SLO known yet: the cap stays
  CHECK(cap(*p) == 4);
  p->decide(view(3, 1.0, 128, 1.5), 1.0);  // head: deadline - arrival = 0.5 s
  p->on_batch_done(view(0), 4, 0.6, 0);    // slower than 0.5: 3.6
  CHECK(cap(*p) == 3);
  p->on_batch_done(view(0), 3, 0.4, 0);    // within: 4.6
  CHECK(cap(*p) == 4);
}

TEST_CASE("clipper-aimd: delayed batching waits for the cap or the delay") {
  auto p = make("clipper-aimd", {{"initial", "4"}, {"delay", "0.5"}});
  BatchDecision d = p->decide(view(2, 1.0), 1.25);
  CHECK(d.size == 0);
  CHECK(d.wait_until == 1.5);
  CHECK(p->decide(view(2, 1.0), 1.5).size == 4);
  CHECK(p->decide(view(4, 1.0), 1.0).size == 4);
  auto now = make("clipper-aimd", {{"initial", "4"}});  // no delay: whatever is queued goes
  CHECK(now->decide(view(1, 1.0), 1.0).size == 4);
  CHECK(now->decide(view(0), 1.0).size == 0);
}

// B = {2, 4}, c(2) = 0.25, c(4) = 0.5, tau = 2, delta = 0.125 tau = 0.25: a queue of 2 or 3
// is due at oldest + 2 - 0.25 - 0.25 = oldest + 1.5.
TEST_CASE("rafiki-greedy: Algorithm 3 on a small B") {
  auto p = make("rafiki-greedy", {{"batch_sizes", "2,4"}, {"costs", "0.25,0.5"},
                                  {"slo_ms", "2000"}, {"delta", "0.125"}});
  CHECK(p->decide(view(4, 1.0), 1.0).size == 4);  // queue >= max(B)
  CHECK(p->decide(view(9, 1.0), 1.0).size == 4);
  BatchDecision d = p->decide(view(3, 1.0), 1.0);
  CHECK(d.size == 0);
  CHECK(d.wait_until == 2.5);
  CHECK(p->decide(view(3, 1.0), 2.5).size == 2);  // largest b in B <= 3
  CHECK(p->decide(view(2, 1.0), 2.49).size == 0);
  d = p->decide(view(1, 1.0), 1.0);  // below min(B): waits until the head has waited tau
  CHECK(d.size == 0);
  CHECK(d.wait_until == 3.0);
  CHECK(p->decide(view(1, 1.0), 2.99).size == 0);
  CHECK(p->decide(view(1, 1.0), 3.0).size == 1);  // then the queue goes whole
  CHECK(p->decide(view(1, 1.0), 100).size == 1);
}

TEST_CASE("rafiki-greedy partial: a queue below min(B) goes once c(queue) fits") {
  auto p = make("rafiki-greedy", {{"batch_sizes", "2,4"}, {"costs", "0.25,0.5"},
                                  {"slo_ms", "2000"}, {"delta", "0.125"}, {"partial", "true"}});
  BatchDecision d = p->decide(view(1, 1.0), 1.0);  // c(1) = 0.125 (extrapolated)
  CHECK(d.wait_until == 1.0 + 2 - 0.25 - 0.125);
  CHECK(p->decide(view(1, 1.0), d.wait_until).size == 1);
}

TEST_CASE("rafiki-greedy: defaults and tau from deadlines") {
  ModelInfo info;
  info.batch_seconds = {{16, 0.07}, {64, 0.23}};  // Rafiki's inception_v3
  auto p = make("rafiki-greedy", {}, info);        // B = 16..64, delta = 0.1 tau
  // tau = 0.46 (= 2 c(64)), c(32) = 0.07 + 16 * 0.16 / 48: due = 1 + 0.46 - 0.046 - c(32).
  BatchDecision d = p->decide(view(40, 1.0, 128, 1.46), 1.0);
  CHECK(d.size == 0);
  CHECK(d.wait_until == Approx(1.0 + 0.46 - 0.046 - (0.07 + 0.16 / 3)));
  CHECK(p->decide(view(64, 1.0, 128, 1.46), 1.0).size == 64);
  // No SLO at all: only full max(B) batches.
  CHECK(p->decide(view(63, 1.0), 1e9).size == 0);
  // Sizes above the model's max batch become it.
  CHECK(p->decide(view(8, 1.0, 8), 1.0).size == 8);
  CHECK(p->decide(view(7, 1.0, 8, 1.46), 1.0).wait_until == Approx(1.46));  // below min(B)
  CHECK(p->decide(view(7, 1.0, 8, 1.46), 1e9).size == 7);  // its head has waited tau
}

TEST_CASE("rafiki-greedy: without a cost prior c(b) is the last measured batch") {
  auto p = make("rafiki-greedy", {{"batch_sizes", "2,4"}, {"slo_ms", "2000"}, {"delta", "0"}});
  CHECK(p->decide(view(2, 1.0), 1.0).wait_until == 3.0);  // c unknown: 0
  p->on_batch_done(view(0), 2, 0.5, 0);
  CHECK(p->decide(view(2, 1.0), 1.0).wait_until == 2.5);
}

TEST_CASE("SLO policies reject bad parameters") {
  using M = std::map<std::string, std::string>;
  for (const M& bad : {M{{"slo_ms", "0"}}, M{{"backoff", "1"}}, M{{"initial", "0"}},
                       M{{"delay", "-1"}}, M{{"step", "x"}}, M{{"slo", "100"}}}) {
    INFO(bad.begin()->first);
    CHECK_THROWS_AS(make("clipper-aimd", bad), ConfigError);
  }
  for (const M& bad : {M{{"batch_sizes", "0,16"}}, M{{"batch_sizes", "1.5"}},
                       M{{"batch_sizes", ""}}, M{{"costs", "0.1"}}, M{{"costs", "a,b,c,d"}},
                       M{{"costs", "-1,1,1,1"}}, M{{"delta", "2"}}, M{{"slo_ms", "-5"}},
                       M{{"partial", "maybe"}}, M{{"tau", "1"}}}) {
    INFO(bad.begin()->first << "=" << bad.begin()->second);
    CHECK_THROWS_AS(make("rafiki-greedy", bad), ConfigError);
  }
  CHECK_NOTHROW(make("rafiki-greedy", {{"batch_sizes", "64, 16"}, {"costs", "0.23, 0.07"}}));
}
