#include "calibration/served_probe.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <stdexcept>

#include "common/clock.h"
#include "common/median.h"
#include "engine/runtime/executor.h"
#include "calibration/probe_server.h"
#include "calibration/speed_probe.h"

namespace servelab::experiments {
namespace {

using Clock = std::chrono::steady_clock;

// Requests in flight while measuring the served extra: enough that the worker never waits for
// the next request (no idle gap, which the idle slowdown covers), few enough that the IO side
// is not swamped.
constexpr uint32_t kServedInFlight = 4;

// Answers that open a served idle turn or the served misses, left out: the loop's first
// round trips.
constexpr uint32_t kIdleOpening = 2;

// Mean compute of `n` served batches of 1 (the engine's compute_ms, after kServedInFlight
// that open the loop).
double served_compute(ProbeServer& probe, uint32_t n) {
  results::RunRecords r = probe.load(kServedInFlight, kServedInFlight + n, nullptr);
  double mean = 0;
  answered_mean_sd(r, kServedInFlight,
                   [](const results::RequestRecord& q) {
                     return q.batch_size == 1 ? q.finish - q.start : std::nan("");
                   },
                   &mean, nullptr);
  return mean;
}

double back_to_back(BatchOfOne& batch, uint32_t n) {
  const auto t0 = Clock::now();
  for (uint32_t i = 0; i < n; ++i) batch.run();
  return seconds_since(t0) / n;
}

// Batches back to back for at least `seconds` (at least one): their mean cost.
double back_to_back_for(BatchOfOne& batch, double seconds) {
  const auto t0 = Clock::now();
  uint32_t n = 0;
  do {
    batch.run();
    ++n;
  } while (seconds_since(t0) < seconds);
  return seconds_since(t0) / n;
}

// One served turn of a closed loop of one client: its mean compute, the mean time the worker
// idled between its batches, and how long it took.
struct ServedTurn {
  double compute = 0, gap = 0, seconds = 0;
};

ServedTurn served_idle_turn(ProbeServer& probe, uint32_t n) {
  const auto t0 = Clock::now();
  const results::RunRecords r = probe.load(1, kIdleOpening + n, nullptr);
  ServedTurn t;
  t.seconds = seconds_since(t0);
  const auto& q = r.requests;
  for (size_t i = kIdleOpening; i < q.size(); ++i)
    if (q[i].status != RequestStatus::Ok || q[i].batch_size != 1 || !std::isfinite(q[i].start))
      throw std::runtime_error("profile: the served idle probe got a failed or batched answer");
  // A record's start is the client's receipt less the compute: the engine's start plus the
  // response path. Between the first and the last batch the worker computed all but the
  // last and idled the rest; the response paths cancel but for their difference.
  const size_t first = kIdleOpening, last = q.size() - 1;
  double busy = 0;
  for (size_t i = first; i < last; ++i) busy += q[i].finish - q[i].start;
  t.compute = (busy + q[last].finish - q[last].start) / double(last - first + 1);
  t.gap = (q[last].start - q[first].start - busy) / double(last - first);
  return t;
}

// The engine of the one-in-flight probes: one worker, batches of 1, the CPU executor with the
// profile's threads, ticking every o.served_idle_quantum as a quantum-mode run does.
runtime::EngineOptions one_in_flight_engine(const ProfileOptions& o) {
  runtime::EngineOptions eo;
  eo.executor = "torch";
  eo.device = "cpu";
  eo.intra_op_threads = std::max(1, o.threads);
  eo.control.quantum = o.served_idle_quantum;
  eo.control.max_batch = 1;
  return eo;
}

}  // namespace

double ServedExtra::extra() const {
  if (served.empty() || alone.empty()) return 0;
  return std::max(0.0, *std::min_element(served.begin(), served.end()) -
                           *std::min_element(alone.begin(), alone.end()));
}

ServedExtra measure_served_extra(const runtime::EngineOptions& eo,
                                 const runtime::ModelSpec& spec, const std::string& image,
                                 uint32_t rounds, uint32_t per_round) {
  ServedExtra out;
  if (rounds == 0 || per_round == 0) return out;
  ProbeServer probe(eo, spec, image);
  auto exec = runtime::make_torch_executor(eo.device, std::max(1, eo.intra_op_threads));
  on_prepared_thread(*exec, [&] {
    BatchOfOne alone(*exec, ModelId(0), spec, image);
    for (uint32_t r = 0; r < rounds; ++r) {
      out.served.push_back(served_compute(probe, per_round));
      out.alone.push_back(back_to_back(alone, per_round));
    }
  });
  return out;
}

ServedIdle measure_served_idle(const runtime::EngineOptions& eo, const runtime::ModelSpec& spec,
                               const std::string& image, uint32_t turns, uint32_t per_turn) {
  ServedIdle out;
  if (turns == 0 || per_turn < 2) return out;
  ProbeServer probe(eo, spec, image);
  auto exec = runtime::make_torch_executor(eo.device, std::max(1, eo.intra_op_threads));
  on_prepared_thread(*exec, [&] {
    BatchOfOne alone(*exec, ModelId(0), spec, image);
    for (uint32_t t = 0; t < turns; ++t) {
      const ServedTurn served = served_idle_turn(probe, per_turn);
      out.turns.push_back({served.compute, back_to_back_for(alone, served.seconds), served.gap});
    }
  });
  std::vector<double> factors, served;
  for (const ServedIdle::Turn& t : out.turns) {
    factors.push_back(t.factor());
    served.push_back(t.served);
    out.gap += t.gap / turns;
  }
  out.factor = median(factors);
  out.served = median(served);
  return out;
}

ServedMiss measure_served_miss(const runtime::EngineOptions& eo, const runtime::ModelSpec& spec,
                               const std::string& image, uint32_t n) {
  ServedMiss out;
  if (n == 0) return out;
  runtime::EngineOptions one = eo;
  one.control.budgets[int(one.control.exec_tier)].models = 1;
  ProbeServer probe(one, spec, image, 2);
  const results::RunRecords r = probe.load(1, kIdleOpening + n, nullptr);
  for (size_t i = kIdleOpening; i < r.requests.size(); ++i) {
    const results::RequestRecord& q = r.requests[i];
    if (q.status != RequestStatus::Ok || q.batch_size != 1 || !q.waited_for_load ||
        !std::isfinite(q.dispatch))
      throw std::runtime_error("profile: the served miss probe got a failed, batched or "
                               "resident answer");
    out.load += q.start - q.dispatch;
    out.loads.push_back(q.start - q.dispatch);
    out.batch += q.finish - q.start;
    ++out.misses;
  }
  out.load /= out.misses;
  out.batch /= out.misses;
  return out;
}

double served_extra_of(const ProfileOptions& o, const runtime::EngineOptions& eo,
                       const runtime::ModelSpec& spec, double batch_of_one,
                       const std::string& image,
                       const std::function<void(const std::string&)>& log) {
  if (o.served_rounds == 0) return 0;
  const uint32_t per_turn = std::clamp<uint32_t>(
      static_cast<uint32_t>(o.served_turn_seconds / std::max(batch_of_one, 1e-3)), 4, 64);
  const ServedExtra turns = measure_served_extra(eo, spec, image, o.served_rounds, per_turn);
  const double extra = turns.extra();
  if (log) {
    std::string line = spec.name + ": a served batch of 1 computes " +
                       std::to_string(extra * 1e3) + " ms longer than back to back (fastest " +
                       "of " + std::to_string(o.served_rounds) + " turns of " +
                       std::to_string(per_turn) + " each, served/alone ms:";
    for (size_t i = 0; i < turns.served.size(); ++i)
      line += " " + std::to_string(turns.served[i] * 1e3) + "/" +
              std::to_string(turns.alone[i] * 1e3);
    log(line + ")");
  }
  return extra;
}

namespace {

// One served idle measurement for the profiler: `turns` turns of a closed loop of one client,
// the engine ticking every `quantum` (0: event-driven, the worker idles one round trip).
ServedIdle served_idle_at(const ProfileOptions& o, const runtime::ModelSpec& spec,
                          double batch_of_one, const std::string& image, double quantum,
                          const std::function<void(const std::string&)>& log) {
  runtime::EngineOptions eo = one_in_flight_engine(o);
  eo.control.quantum = quantum;
  // Each request's turn: its batch, the round trip, and up to a quantum's wait for the tick.
  const double per_request = batch_of_one + quantum + 1e-3;
  const uint32_t per_turn = std::clamp<uint32_t>(
      static_cast<uint32_t>(o.served_idle_turn_seconds / per_request), 2, 4000);
  const ServedIdle s = measure_served_idle(eo, spec, image, o.served_idle_turns, per_turn);
  if (log && !s.turns.empty()) {
    std::string line = spec.name + ": served at one in flight" +
                       (quantum > 0 ? ", ticking every " + std::to_string(quantum * 1e3) + " ms"
                                    : ", event-driven") +
                       ", idling " + std::to_string(s.gap * 1e3) +
                       " ms between batches, a batch of 1 costs " + std::to_string(s.factor) +
                       "x back to back, " + std::to_string(s.served * 1e3) +
                       " ms (medians of turns of " + std::to_string(per_turn) +
                       " requests, served/alone ms:";
    for (const ServedIdle::Turn& t : s.turns)
      line += " " + std::to_string(t.served * 1e3) + "/" + std::to_string(t.alone * 1e3);
    log(line + ")");
  }
  return s;
}

}  // namespace

IdleSlowdown served_idle_of(const ProfileOptions& o, const runtime::ModelSpec& spec,
                            double batch_of_one, const std::string& image,
                            RequestOverhead& overhead,
                            const std::function<void(const std::string&)>& log) {
  if (o.served_idle_turns == 0) return {};
  // The ticked loop's long gaps give the full slowdown and the served batch; the event-driven
  // loop's gap of one round trip, how much of it has set in after a short idle.
  const ServedIdle ticked =
      served_idle_at(o, spec, batch_of_one, image, o.served_idle_quantum, log);
  if (ticked.turns.empty()) return {};
  IdleSlowdown out;  // within the profile's bounds (a model of microseconds can exceed 10)
  const double long_gap = std::max(ticked.gap, 1e-4);
  if (o.served_idle_quantum > 0) {
    const ServedIdle event = served_idle_at(o, spec, batch_of_one, image, 0, log);
    if (!event.turns.empty() && event.gap > 0 && event.gap < long_gap)
      out.points.push_back({event.gap, std::min(event.factor, 10.0)});
  }
  out.points.push_back({long_gap, std::min(ticked.factor, 10.0)});
  overhead.served_idle_batch = ticked.served;
  return out;
}

void served_miss_of(const ProfileOptions& o, const runtime::ModelSpec& spec,
                    const std::string& image, RequestOverhead& overhead,
                    const std::function<void(const std::string&)>& log) {
  if (o.served_miss_requests == 0) return;
  const ServedMiss m =
      measure_served_miss(one_in_flight_engine(o), spec, image, o.served_miss_requests);
  overhead.served_miss_load = m.load;
  overhead.served_miss_batch = m.batch;
  overhead.served_miss_load_samples = m.loads;
  if (log) log(spec.name + ": a miss served one at a time waits " + std::to_string(m.load * 1e3) +
               " ms for its eviction and load, then computes " + std::to_string(m.batch * 1e3) +
               " ms (mean of " + std::to_string(m.misses) + ")");
}

}  // namespace servelab::experiments
