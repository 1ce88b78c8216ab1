// The per-request overhead a client of the real engine sees beyond the batch itself: the
// load generator's send, HTTP parsing, image decode and preprocessing on the IO thread, the
// hand-offs to the control and worker threads, the response and the client's read. Measured
// end to end with the same in-process server and load generator as real mode: on a probe
// model whose batches cost nothing (the profiled executor with a zero-cost profile) for the
// IO side's burst capacity, and on the real model for the overhead around a real batch.
// LibTorch runs inside the engine only; no LibTorch includes here.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <thread>

#include "calibration/probe_server.h"
#include "calibration/profiler.h"

namespace servelab::experiments {

RoundTrip measure_round_trip(const std::string& image, uint32_t requests, uint32_t warmup) {
  runtime::EngineOptions eo;
  eo.executor = "profiled";
  runtime::ModelSpec spec;
  spec.name = "probe";
  ProbeServer probe(eo, spec, image);
  loadgen::LoadStats stats;
  RoundTrip out;
  // Concurrency 1: the round trip of one request alone.
  results::RunRecords r = probe.load(1, warmup + requests, &stats);
  out.client_seconds = stats.client_cpu_s / double(warmup + requests);
  answered_mean_sd(r, warmup, [](const results::RequestRecord& q) { return q.finish - q.arrival; },
                   &out.seconds, nullptr);
  // A burst, as closed-loop clients send when a batch ends: how fast the server's IO side
  // (accept, parse, decode, preprocess; the load generator on the same cores) takes requests.
  r = probe.load(32, 32 * 8, nullptr);
  double first = 1e300, last = 0;
  uint32_t n = 0;
  for (const auto& q : r.requests) {
    if (q.status != RequestStatus::Ok) continue;
    first = std::min(first, q.arrival);
    last = std::max(last, q.finish);
    ++n;
  }
  if (n > 1 && last > first) out.capacity_rps = n / (last - first);
  return out;
}

namespace {

// The same span for requests that each find the server idle: one at a time, on a connection
// already open, after the server held no request for RequestOverhead::kIdleIntakeGap. Their
// mean; NaN when none was answered.
template <class Span>
double idle_round_trip(ProbeServer& probe, uint32_t n, Span span) {
  const auto pause = std::chrono::duration<double>(RequestOverhead::kIdleIntakeGap);
  double sum = 0;
  uint32_t answered = 0;
  for (uint32_t i = 0; i < n; ++i) {
    const results::RunRecords r =
        probe.load(1, 1, nullptr, [pause] { std::this_thread::sleep_for(pause); });
    for (const auto& q : r.requests) {
      const double x = span(q);
      if (q.status != RequestStatus::Ok || !std::isfinite(x)) continue;
      sum += x;
      ++answered;
    }
  }
  return answered ? sum / answered : std::nan("");
}

}  // namespace

ModelOverhead measure_model_overhead(const runtime::EngineOptions& eo,
                                     const runtime::ModelSpec& spec, const std::string& image,
                                     uint32_t requests, uint32_t warmup,
                                     uint32_t idle_requests) {
  ProbeServer probe(eo, spec, image);
  // The load generator reads the engine's time split from each answer: dispatch - arrival
  // is then the round trip less the batch's load and compute.
  results::RunRecords r = probe.load(1, warmup + requests, nullptr);
  ModelOverhead out;
  const auto outside_batch = [](const results::RequestRecord& q) {
    return q.batch_size ? q.dispatch - q.arrival : std::nan("");
  };
  answered_mean_sd(r, warmup, outside_batch, &out.seconds, &out.stddev);
  out.idle_seconds = idle_round_trip(probe, idle_requests, outside_batch);
  return out;
}

Time sleep_until_tick(runtime::Engine& engine, Time quantum) {
  const Time now = engine.now();
  std::this_thread::sleep_for(std::chrono::duration<double>(std::ceil(now / quantum) * quantum - now));
  return engine.now();
}

std::vector<std::vector<double>> measure_cold_bursts(const std::string& image,
                                                     const std::vector<uint32_t>& sizes,
                                                     uint32_t per_size, double quantum) {
  if (!(quantum > 0)) throw std::invalid_argument("cold bursts: quantum must be positive");
  // Every request of a burst waits for the first tick after the start, where one batch takes
  // all of them: each one's queue time then tells when it joined the queue. Nothing runs
  // before that tick, as in a real run before its first.
  runtime::EngineOptions eo;
  eo.executor = "profiled";
  eo.control.quantum = quantum;
  eo.control.batching = {"max-delay", {}};
  eo.control.max_batch = std::max(1u, *std::max_element(sizes.begin(), sizes.end()));
  runtime::ModelSpec spec;
  spec.name = "burst";
  // One server for all bursts: a fresh one per burst, as real mode has per run, costs seconds
  // a burst and does not change the spread beyond the machine's drift between measurements.
  ProbeServer probe(eo, spec, image);
  probe.load(4, 32, nullptr);  // real mode's warm-up
  std::vector<std::vector<double>> out;
  for (uint32_t size : sizes) {
    for (uint32_t got = 0, tries = 0; got < per_size && tries < 3 * per_size; ++tries) {
      Time start = 0;
      // As real mode starts its runs: connections open, just after a tick (a quantum's pause
      // since the last answers).
      auto after_tick = [&] { start = sleep_until_tick(probe.engine(), quantum); };
      results::RunRecords r = probe.load(size, size, nullptr, after_tick);
      const Time tick = (std::floor(start / quantum) + 1) * quantum;  // the first after start
      std::vector<double> offsets;
      for (const auto& q : r.requests) {
        // One answered batch of the whole burst, else a request missed the first tick.
        if (q.status != RequestStatus::Ok || q.batch_size != size) break;
        const double queue_s = q.dispatch - q.queued;  // the answer's queue_ms
        offsets.push_back(std::max(0.0, tick - start - queue_s));
      }
      if (offsets.size() != size) continue;
      out.push_back(std::move(offsets));
      ++got;
    }
  }
  return out;
}

}  // namespace servelab::experiments
