// Helpers shared by the simulator tests: hand-built profiles, setups and workloads, so that
// the ground-truth tests depend on neither the workload generator nor the config reader.
#pragma once

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "simulator/simulator.h"

namespace servelab::sim::test {

// Each request's finish in id order, to the nanosecond (sums of hand-picked costs are exact
// only so far).
inline std::vector<double> finish_times(const SimulationResult& r) {
  std::vector<double> f;
  for (const auto& q : r.records.requests) f.push_back(std::round(q.finish * 1e9) / 1e9);
  return f;
}

// The same of a run that must have kept the controller's contract and lost no request.
inline std::vector<double> clean_finish_times(const SimulationResult& r) {
  REQUIRE(r.violations.empty());
  REQUIRE(r.lost == 0);
  return finish_times(r);
}

// A profile with constant batch latency `batch1` for one request, growing by `per_extra`
// seconds per extra request, and the given host->device load time.
inline ModelProfile constant_profile(double batch1, double per_extra = 0, double load = 0.001) {
  ModelProfile p;
  p.name = "m";
  p.size_bytes = 1000;
  p.batches = {{1, batch1, 0, {}}, {8, batch1 + 7 * per_extra, 0, {}}};
  p.set_load_time(Tier::Host, Tier::Device, load);
  p.set_load_time(Tier::Disk, Tier::Host, 10 * load);
  return p;
}

// n models, one worker, batching none, exec tier device holding `room` models (LRU).
inline SimulationSetup cache_setup(uint32_t n, uint32_t room, const ModelProfile& p) {
  SimulationSetup s;
  s.control.workers = 1;
  s.control.exec_tier = Tier::Device;
  s.control.budgets[int(Tier::Device)].models = room;
  s.control.batching = {"none", {}};
  s.control.eviction = {"lru", {}};
  s.control.scheduling = {"oldest-first", {}};
  for (uint32_t i = 0; i < n; ++i) s.models.push_back({std::string("m").append(std::to_string(i)), p, 1, 0, {}});
  return s;
}

// Closed loop, `concurrency` in flight, no think time, the given model sequence.
inline workloads::Workload closed_loop(std::vector<uint32_t> models, uint32_t concurrency = 1) {
  workloads::Workload w;
  w.closed_loop = true;
  w.concurrency = concurrency;
  w.models = std::move(models);
  return w;
}

// Open loop: one request of model 0 at each of `times` (seconds).
inline workloads::Workload arrivals(std::vector<double> times) {
  workloads::Workload w;
  w.send_times = times;
  w.models.assign(times.size(), 0);
  return w;
}

// The latencies (finish - arrival, in request order) of `setup` serving 30 requests of model 0,
// one every `spacing` seconds from `spacing` on.
inline std::vector<double> spaced_latencies(const SimulationSetup& setup, double spacing) {
  std::vector<double> times;
  for (int i = 1; i <= 30; ++i) times.push_back(i * spacing);
  auto r = simulate(setup, arrivals(times));
  std::vector<double> out;
  for (const auto& q : r.records.requests) out.push_back(q.finish - q.arrival);
  return out;
}

// The contract tests' setting: six models, room for three, three workers, noisy batch costs
// that grow with batch size, a request timeout and an SLO: exercises batching, eviction and
// scheduling together.
inline SimulationSetup contract_setup(Time quantum) {
  ModelProfile p = constant_profile(0.004, 0.001, 0.02);
  p.batches[0].stddev = 0.001;
  p.batches[1].stddev = 0.002;
  SimulationSetup s = cache_setup(6, 3, p);
  s.control.workers = 3;
  s.control.quantum = quantum;
  s.control.max_batch = 8;
  s.control.request_timeout = 0.5;
  s.slo = 0.1;
  s.noise = CostNoise::Normal;
  s.models[0].contexts = 2;
  return s;
}

// Open loop Poisson arrivals at `rate` per second, models drawn uniformly from [0, n).
inline workloads::Workload poisson(size_t count, double rate, uint32_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::exponential_distribution<double> gap(rate);
  std::uniform_int_distribution<uint32_t> model(0, n - 1);
  workloads::Workload w;
  double t = 0;
  for (size_t i = 0; i < count; ++i) {
    t += gap(rng);
    w.send_times.push_back(t);
    w.models.push_back(model(rng));
  }
  return w;
}

// Independent draws from explicit probabilities (the independent reference model).
inline std::vector<uint32_t> draw_models(const std::vector<double>& p, size_t count,
                                         uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::discrete_distribution<uint32_t> d(p.begin(), p.end());
  std::vector<uint32_t> out(count);
  for (auto& m : out) m = d(rng);
  return out;
}

inline std::vector<double> zipf_probabilities(uint32_t n, double alpha) {
  std::vector<double> p(n);
  double sum = 0;
  for (uint32_t i = 0; i < n; ++i) sum += p[i] = 1.0 / std::pow(double(i + 1), alpha);
  for (double& x : p) x /= sum;
  return p;
}

}  // namespace servelab::sim::test
