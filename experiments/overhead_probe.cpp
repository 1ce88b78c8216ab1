// The per-request overhead a client of the real engine sees beyond the batch itself: the
// load generator's send, HTTP parsing, image decode and preprocessing on the IO thread, the
// hand-offs to the control and worker threads, the response and the client's read. Measured
// end to end with the same in-process server and load generator as real mode: on a probe
// model whose batches cost nothing (the profiled executor with a zero-cost profile) for the
// IO side's burst capacity, and on the real model for the overhead around a real batch.
// LibTorch runs inside the engine only; no LibTorch includes here.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <thread>

#include "common/clock.h"
#include "common/median.h"
#include "engine/runtime/executor.h"
#include "engine/server/http_server.h"
#include "experiments/profiler.h"
#include "experiments/speed_probe.h"
#include "workloads/loadgen/loadgen.h"

namespace servelab::experiments {
namespace {

namespace fs = std::filesystem;

// An in-process server (the same IO threads as real mode) serving one model, and a
// closed-loop load generator against it. With the profiled executor and no profile file, the
// model is a zero-cost probe. Owns a temporary folder, removed on destruction.
class ProbeServer {
 public:
  ProbeServer(runtime::EngineOptions eo, runtime::ModelSpec spec, const std::string& image)
      : dir_{fs::temp_directory_path() /
             ("servelab-overhead-" + std::to_string(::getpid()) + "-" + spec.name)} {
    const fs::path& dir = dir_.path;
    if (eo.executor == "profiled" && eo.profile_file.empty()) {
      std::ofstream(dir / "probe.yaml")
          << "models:\n  " << spec.name << ":\n    size_bytes: 1\n"
          << "    batch_latency_ms: [{batch: 1, mean: 0}]\n    load_ms: {disk->host: 0}\n";
      eo.profile_file = (dir / "probe.yaml").string();
      spec.file = (dir / "probe.pt").string();  // never read by the profiled executor
    }
    server::ServerOptions so;
    so.store_dir = (dir / "store").string();
    so.log = false;
    srv_ = std::make_unique<server::HttpServer>(so, std::move(eo));
    srv_->start();
    srv_->engine().register_model(spec);
    lo_.url = "http://127.0.0.1:" + std::to_string(srv_->port());
    lo_.model_names = {spec.name};
    lo_.body = image;
    lo_.content_type = "image/jpeg";
  }

  results::RunRecords load(uint32_t concurrency, uint32_t n, loadgen::LoadStats* stats,
                           std::function<void()> before_start = {}) {
    workloads::Workload w;
    w.closed_loop = true;
    w.concurrency = concurrency;
    w.models.assign(n, 0);
    loadgen::LoadOptions lo = lo_;
    lo.before_start = std::move(before_start);
    return loadgen::run_load(lo, w, stats);
  }
  runtime::Engine& engine() { return srv_->engine(); }

 private:
  struct TempDir {  // removed last, also when the constructor throws
    explicit TempDir(fs::path p) : path(std::move(p)) { fs::create_directories(path); }
    ~TempDir() {
      std::error_code ec;
      fs::remove_all(path, ec);
    }
    fs::path path;
  } dir_;
  std::unique_ptr<server::HttpServer> srv_;  // stops on destruction
  loadgen::LoadOptions lo_;
};

// Mean and (when `sd` is given) sample standard deviation of `span(record)` over the answered
// records after the first `skip`; throws when none was answered.
template <class Span>
void answered_mean_sd(const results::RunRecords& r, size_t skip, Span span, double* mean,
                      double* sd) {
  double sum = 0, sq = 0;
  uint32_t n = 0;
  for (size_t i = skip; i < r.requests.size(); ++i) {
    const auto& q = r.requests[i];
    if (q.status != RequestStatus::Ok) continue;
    const double x = span(q);
    if (!std::isfinite(x)) continue;
    sum += x;
    sq += x * x;
    ++n;
  }
  if (n == 0) throw std::runtime_error("profile: the overhead probe got no answers");
  *mean = sum / n;
  if (sd) *sd = n > 1 ? std::sqrt(std::max(0.0, (sq - sum * sum / n) / (n - 1))) : 0;
}

}  // namespace

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

ModelOverhead measure_model_overhead(const runtime::EngineOptions& eo,
                                     const runtime::ModelSpec& spec, const std::string& image,
                                     uint32_t requests, uint32_t warmup) {
  ProbeServer probe(eo, spec, image);
  // The load generator reads the engine's time split from each answer: dispatch - arrival
  // is then the round trip less the batch's load and compute.
  results::RunRecords r = probe.load(1, warmup + requests, nullptr);
  ModelOverhead out;
  answered_mean_sd(r, warmup,
                   [](const results::RequestRecord& q) {
                     return q.batch_size ? q.dispatch - q.arrival : std::nan("");
                   },
                   &out.seconds, &out.stddev);
  return out;
}

namespace {

// Requests in flight while measuring served batches: enough that the worker never waits for
// the next request (no idle gap, which the idle slowdown covers), few enough that the IO side
// is not swamped.
constexpr uint32_t kServedInFlight = 4;

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
  const auto t0 = std::chrono::steady_clock::now();
  for (uint32_t i = 0; i < n; ++i) batch.run();
  return seconds_since(t0) / n;
}

}  // namespace

double measure_served_extra(const runtime::EngineOptions& eo, const runtime::ModelSpec& spec,
                            const std::string& image, uint32_t rounds, uint32_t per_round) {
  if (rounds == 0 || per_round == 0) return 0;
  ProbeServer probe(eo, spec, image);
  auto exec = runtime::make_torch_executor(eo.device, std::max(1, eo.intra_op_threads));
  std::vector<double> differences;
  std::exception_ptr error;
  // The back-to-back batches on a thread prepared as the engine's workers are; the served
  // ones on the engine's worker while this thread waits for the load generator.
  std::thread([&] {
    try {
      exec->prepare_thread();
      BatchOfOne alone(*exec, ModelId(0), spec, image);
      for (uint32_t r = 0; r < rounds; ++r) {
        const double served = served_compute(probe, per_round);
        differences.push_back(served - back_to_back(alone, per_round));
      }
    } catch (...) {
      error = std::current_exception();
    }
  }).join();
  if (error) std::rethrow_exception(error);
  // The median turn: one disturbed block (another tenant, a slow core) moves it least.
  return std::max(0.0, median(differences));
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
  // One server for all bursts: a fresh one per burst, as real mode has per run, costs ~2.5 s
  // each here, and did not change the spread beyond the machine's drift between measurements.
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
