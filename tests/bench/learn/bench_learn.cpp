// Decision time of the deployed rafiki-rl (state + MLP forward + argmax) beside
// rafiki-greedy's decide(), on the same full queue: Rafiki reports 0.02 s per RL decision.
//   build/tests/bench/learn/bench_learn
#include <benchmark/benchmark.h>

#include <random>

#include "engine/control/policy_registry.h"
#include "learn/rafiki_rl.h"

namespace {

using namespace servelab;

// The network `servelab train` makes by default: state -> 64 -> 64 -> |B|, tanh.
learn::Mlp trained_shape(size_t inputs, size_t actions) {
  std::mt19937_64 rng(1);
  std::normal_distribution<float> w(0, 0.1f);
  auto layer = [&](size_t in, size_t out) {
    learn::DenseLayer l{in, out, std::vector<float>(in * out), std::vector<float>(out)};
    for (float& x : l.weight) x = w(rng);
    return l;
  };
  return learn::Mlp({layer(inputs, 64), layer(64, 64), layer(64, actions)});
}

// A queue of `queued` requests that arrived 1 ms apart, the oldest at 0.
struct Queue {
  ModelQueue q;
  ModelView view;
  ModelInfo info;
  explicit Queue(uint32_t queued) {
    info.batch_seconds = {{16, 0.07}, {64, 0.23}};
    for (uint32_t i = 0; i < queued; ++i) q.push_back(Request{i, 0, i * 0.001, i * 0.001 + 0.46});
    view.info = &info;
    view.queued = queued;
    view.oldest_arrival = 0;
    view.oldest_deadline = 0.46;
    view.max_batch = 64;
    view.queue = &q;
  }
};

void BM_Decide(benchmark::State& state, const char* policy) {
  Queue queue(uint32_t(state.range(0)));
  std::unique_ptr<BatchingPolicy> p;
  if (std::string(policy) == "rafiki-rl") {
    learn::RlSettings s;
    p = learn::make_rafiki_rl(s, queue.info, std::make_shared<learn::ArgmaxAgent>(
                                                 trained_shape(learn::state_size(s), 4)));
  } else {
    p = PolicyRegistry::batching({policy, {}}, queue.info);
  }
  Time now = 0.1;
  for (auto _ : state) {
    benchmark::DoNotOptimize(p->decide(queue.view, now));
    now += 1e-9;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK_CAPTURE(BM_Decide, rafiki_rl, "rafiki-rl")->Arg(8)->Arg(64)->Arg(200);
BENCHMARK_CAPTURE(BM_Decide, rafiki_greedy, "rafiki-greedy")->Arg(8)->Arg(64)->Arg(200);

}  // namespace

BENCHMARK_MAIN();
