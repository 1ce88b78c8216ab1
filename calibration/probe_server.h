// The profiler's probes of the serving path: an in-process server (the same IO threads as
// real mode) serving one model (or that model under several names, each from a copy of its
// file), and a closed-loop load generator against it, as real mode runs them. With the
// profiled executor and no profile file, the model is a zero-cost probe.
// LibTorch runs inside the engine only; no LibTorch includes here.
#pragma once

#include <cmath>
#include <filesystem>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>

#include "engine/runtime/engine.h"
#include "engine/server/http_server.h"
#include "results/records.h"
#include "workloads/loadgen/loadgen.h"

namespace servelab::experiments {

// Owns a temporary folder (the server's store), removed on destruction; the server stops on
// destruction. Used from one thread.
class ProbeServer {
 public:
  // `copies` > 1: the model is registered `copies` times (spec.name, then spec.name + "-2",
  // ...), each from a file of its own in the temporary folder (a copy of spec.file), as an
  // experiment's copies of one model are. A profiled executor's profile names every copy.
  ProbeServer(runtime::EngineOptions eo, runtime::ModelSpec spec, const std::string& image,
              uint32_t copies = 1);

  // `n` requests of a closed loop of `concurrency` clients, request i to copy i mod copies;
  // `before_start` runs once the connections are open.
  results::RunRecords load(uint32_t concurrency, uint32_t n, loadgen::LoadStats* stats,
                           std::function<void()> before_start = {});
  runtime::Engine& engine() { return srv_->engine(); }

 private:
  struct TempDir {  // removed last, also when the constructor throws
    explicit TempDir(std::filesystem::path p);
    ~TempDir();
    std::filesystem::path path;
  } dir_;
  std::unique_ptr<server::HttpServer> srv_;
  loadgen::LoadOptions lo_;
};

// Mean and (when `sd` is given) sample standard deviation of `span(record)` over the answered
// records after the first `skip` (NaN spans left out); throws when none was answered.
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

}  // namespace servelab::experiments
