// The per-request overhead a client of the real engine sees beyond the batch itself: the
// load generator's send, HTTP parsing, image decode and preprocessing on the IO thread, the
// hand-offs to the control and worker threads, the response and the client's read. Measured
// end to end with the same in-process server and load generator as real mode, on a probe
// model whose batches cost nothing (the profiled executor with a zero-cost profile), so the
// round trip is the overhead alone. No LibTorch here.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "engine/server/http_server.h"
#include "experiments/profiler.h"
#include "workloads/loadgen/loadgen.h"

namespace servelab::experiments {

RoundTrip measure_round_trip(const std::string& image, uint32_t requests, uint32_t warmup) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() /
                 ("servelab-overhead-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  struct Cleanup {
    fs::path d;
    ~Cleanup() { std::error_code ec; fs::remove_all(d, ec); }
  } cleanup{dir};
  std::ofstream(dir / "probe.yaml")
      << "models:\n  probe:\n    size_bytes: 1\n"
         "    batch_latency_ms: [{batch: 1, mean: 0}]\n    load_ms: {disk->host: 0}\n";
  runtime::EngineOptions eo;  // one worker, event mode, no batching: nothing waits
  eo.executor = "profiled";
  eo.profile_file = (dir / "probe.yaml").string();
  server::ServerOptions so;   // the same IO threads as real mode
  so.store_dir = (dir / "store").string();
  so.log = false;
  server::HttpServer srv(so, eo);
  srv.start();
  runtime::ModelSpec spec;
  spec.name = "probe";
  spec.file = (dir / "probe.pt").string();  // never read by the profiled executor
  srv.engine().register_model(spec);

  loadgen::LoadOptions lo;
  lo.url = "http://127.0.0.1:" + std::to_string(srv.port());
  lo.model_names = {"probe"};
  lo.body = image;
  lo.content_type = "image/jpeg";
  loadgen::LoadStats stats;
  auto load = [&](uint32_t concurrency, uint32_t n) {
    workloads::Workload w;
    w.closed_loop = true;
    w.concurrency = concurrency;
    w.models.assign(n, 0);
    return loadgen::run_load(lo, w, &stats);
  };
  RoundTrip out;
  // Concurrency 1: the round trip of one request alone.
  results::RunRecords r = load(1, warmup + requests);
  out.client_seconds = stats.client_cpu_s / double(warmup + requests);
  double sum = 0, sq = 0;
  uint32_t n = 0;
  for (size_t i = warmup; i < r.requests.size(); ++i) {
    const auto& q = r.requests[i];
    if (q.status != RequestStatus::Ok) continue;
    sum += q.finish - q.arrival;
    sq += (q.finish - q.arrival) * (q.finish - q.arrival);
    ++n;
  }
  if (n == 0) throw std::runtime_error("profile: the overhead probe got no answers");
  out.seconds = sum / n;
  out.stddev = n > 1 ? std::sqrt(std::max(0.0, (sq - sum * sum / n) / (n - 1))) : 0;
  // A burst, as closed-loop clients send when a batch ends: how fast the server's IO side
  // (accept, parse, decode, preprocess; the load generator on the same cores) takes requests.
  r = load(32, 32 * 8);
  double first = 1e300, last = 0;
  n = 0;
  for (const auto& q : r.requests) {
    if (q.status != RequestStatus::Ok) continue;
    first = std::min(first, q.arrival);
    last = std::max(last, q.finish);
    ++n;
  }
  if (n > 1 && last > first) out.capacity_rps = n / (last - first);
  srv.stop();
  return out;
}

}  // namespace servelab::experiments
