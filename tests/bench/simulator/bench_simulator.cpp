// Simulator throughput: the bare event loop (events per second of wall time) and whole
// serving simulations (simulated requests per second of wall time).
//   build-*/tests/bench/simulator/bench_simulator [--benchmark_format=json]
#include <benchmark/benchmark.h>

#include <random>

#include "engine/control/cost_profile.h"
#include "simulator/simulation.h"
#include "simulator/simulator.h"

using namespace servelab;
using namespace servelab::sim;

namespace {

// Each event reschedules itself a pseudo-random delay later, so the list keeps `pending`
// events with mixed times: a hold model, the classic event-list benchmark. The delay is a
// whole number of microseconds below 1024, so many pending events share a time (as a
// simulation's do: equal service times, batches answered together); `distinct` draws it
// from [0, 1.024 ms) instead, so that times almost never tie.
struct Hold {
  Simulation* sim = nullptr;
  bool distinct = false;
  uint64_t x = 88172645463325252ull;
  void on_event(uint64_t tag, Time now) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    const double delay = distinct ? double(x >> 11) * 0x1p-53 * 1.024e-3 : double(x % 1024) * 1e-6;
    sim->schedule<&Hold::on_event>(now + delay, this, tag);
  }
};

void hold_loop(benchmark::State& state, const char* list, bool distinct) {
  const size_t pending = state.range(0);
  Simulation sim(make_event_list(list));
  Hold h;
  h.sim = &sim;
  h.distinct = distinct;
  for (size_t i = 0; i < pending; ++i) sim.schedule<&Hold::on_event>(double(i) * 1e-6, &h, i);
  // The hold model's steady state, as in the classic method: the list's buffers reach the
  // sizes a long simulation keeps, and the initial time pattern is gone, before timing.
  for (size_t i = 0; i < 32 * pending + 100000; ++i) sim.run_one();
  const int batch = 1 << 16;
  for (auto _ : state) {
    for (int i = 0; i < batch; ++i) sim.run_one();
  }
  state.SetItemsProcessed(state.iterations() * batch);
  state.counters["events_per_s"] =
      benchmark::Counter(double(state.iterations()) * batch, benchmark::Counter::kIsRate);
}
void BM_EventLoop(benchmark::State& state, const char* list) { hold_loop(state, list, false); }
void BM_EventLoopDistinct(benchmark::State& state, const char* list) {
  hold_loop(state, list, true);
}
BENCHMARK_CAPTURE(BM_EventLoop, radix, "radix")->Arg(16)->Arg(1024)->Arg(65536);
BENCHMARK_CAPTURE(BM_EventLoop, quad, "quad")->Arg(16)->Arg(1024)->Arg(65536);
BENCHMARK_CAPTURE(BM_EventLoop, heap, "heap")->Arg(16)->Arg(1024)->Arg(65536);
BENCHMARK_CAPTURE(BM_EventLoop, set, "set")->Arg(1024);
BENCHMARK_CAPTURE(BM_EventLoopDistinct, radix, "radix")->Arg(16)->Arg(1024)->Arg(65536);
BENCHMARK_CAPTURE(BM_EventLoopDistinct, quad, "quad")->Arg(1024)->Arg(65536);

// Rafiqi's engine (rafiqi-ewma + lru + lru-order, 5 ms quantum, max batch 8, 4 workers) on
// CaffeNet-like costs: `models` models, room for 4 on the device, Zipf(1.1) access, closed
// loop with `concurrency` requests in flight.
void BM_Simulation(benchmark::State& state) {
  const uint32_t models = uint32_t(state.range(0));
  const uint32_t concurrency = uint32_t(state.range(1));
  const size_t requests = 200000;
  ModelProfile p;
  p.name = "caffenet";
  p.size_bytes = 233000000;
  p.batches = {{1, 0.008, 0.0004, {}}, {8, 0.018, 0.0009, {}}};
  p.set_load_time(Tier::Host, Tier::Device, 0.09);
  SimulationSetup s;
  s.control.workers = 4;
  s.control.quantum = 0.005;
  s.control.max_batch = 8;
  s.control.exec_tier = Tier::Device;
  s.control.budgets[int(Tier::Device)].models = 4;
  s.control.batching = {"rafiqi-ewma", {}};
  s.control.eviction = {"lru", {}};
  s.control.scheduling = {"lru-order", {}};
  s.noise = CostNoise::Normal;
  for (uint32_t i = 0; i < models; ++i) s.models.push_back({"m" + std::to_string(i), p, 4, 0, {}});
  workloads::Workload w;
  w.closed_loop = true;
  w.concurrency = concurrency;
  std::vector<double> weights(models);
  for (uint32_t i = 0; i < models; ++i) weights[i] = 1.0 / std::pow(i + 1.0, 1.1);
  std::mt19937_64 rng(1);
  std::discrete_distribution<uint32_t> pick(weights.begin(), weights.end());
  for (size_t i = 0; i < requests; ++i) w.models.push_back(pick(rng));
  uint64_t events = 0;
  for (auto _ : state) {
    SimulationResult r = simulate(s, w);
    if (r.lost || !r.violations.empty()) state.SkipWithError("simulation lost requests");
    events += r.events;
    benchmark::DoNotOptimize(r);
  }
  state.SetItemsProcessed(state.iterations() * requests);
  state.counters["requests_per_s"] =
      benchmark::Counter(double(state.iterations()) * requests, benchmark::Counter::kIsRate);
  state.counters["events_per_request"] = double(events) / (double(state.iterations()) * requests);
}
BENCHMARK(BM_Simulation)->Args({5, 1})->Args({5, 64})->Args({20, 256})->Unit(benchmark::kMillisecond);

// Scheduling among many ready models: `models` models all resident, 4 workers, batching none,
// a closed loop of 4 requests per model spread uniformly, so nearly every model has a queue
// and each free worker chooses among ~`models` ready ones (scheduling policy by name).
void BM_ManyReadyModels(benchmark::State& state, const char* scheduling) {
  const uint32_t models = uint32_t(state.range(0));
  const size_t requests = 400000;
  ModelProfile p;
  p.name = "m";
  p.size_bytes = 1000;
  p.batches = {{1, 0.001, 0, {}}};
  p.set_load_time(Tier::Disk, Tier::Host, 0.01);
  SimulationSetup s;
  s.control.workers = 4;
  s.control.batching = {"none", {}};
  s.control.scheduling = {scheduling, {}};
  for (uint32_t i = 0; i < models; ++i) s.models.push_back({"m" + std::to_string(i), p, 4, 0, {}});
  workloads::Workload w;
  w.closed_loop = true;
  w.concurrency = 4 * models;
  std::mt19937_64 rng(3);
  for (size_t i = 0; i < requests; ++i) w.models.push_back(uint32_t(rng() % models));
  for (auto _ : state) {
    SimulationResult r = simulate(s, w);
    if (r.lost || !r.violations.empty()) state.SkipWithError("simulation lost requests");
    benchmark::DoNotOptimize(r);
  }
  state.counters["requests_per_s"] =
      benchmark::Counter(double(state.iterations()) * requests, benchmark::Counter::kIsRate);
}
BENCHMARK_CAPTURE(BM_ManyReadyModels, oldest_first, "oldest-first")
    ->Arg(10)->Arg(1000)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ManyReadyModels, lru_order, "lru-order")
    ->Arg(1000)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
