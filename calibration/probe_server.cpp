#include "calibration/probe_server.h"

#include "config/profile_yaml.h"

#include <unistd.h>

#include <chrono>
#include <fstream>

namespace servelab::experiments {

namespace fs = std::filesystem;

ProbeServer::TempDir::TempDir(fs::path p) : path(std::move(p)) { fs::create_directories(path); }

ProbeServer::TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path, ec);
}

ProbeServer::ProbeServer(runtime::EngineOptions eo, runtime::ModelSpec spec,
                         const std::string& image, uint32_t copies)
    : dir_{fs::temp_directory_path() /
           ("servelab-overhead-" + std::to_string(::getpid()) + "-" + spec.name)} {
  const fs::path& dir = dir_.path;
  if (eo.executor == "profiled" && !eo.cost_profile) {
    std::ofstream(dir / "probe.yaml")
        << "models:\n  " << spec.name << ":\n    size_bytes: 1\n"
        << "    batch_latency_ms: [{batch: 1, mean: 0}]\n    load_ms: {disk->host: 0}\n";
    eo.cost_profile =
        std::make_shared<const CostProfile>(config::load_profile((dir / "probe.yaml").string()));
    spec.file = (dir / "probe.pt").string();  // never read by the profiled executor
  }
  server::ServerOptions so;
  so.store_dir = (dir / "store").string();
  so.log = false;
  srv_ = std::make_unique<server::HttpServer>(so, std::move(eo));
  srv_->start();
  srv_->engine().register_model(spec);
  lo_.model_names = {spec.name};
  for (uint32_t k = 2; k <= copies; ++k) {
    runtime::ModelSpec copy = spec;
    copy.name = spec.name + "-" + std::to_string(k);
    copy.file = (dir / (copy.name + ".pt")).string();
    if (fs::exists(spec.file))  // the profiled executor's are never read
      fs::copy_file(spec.file, copy.file, fs::copy_options::overwrite_existing);
    srv_->engine().register_model(copy);
    lo_.model_names.push_back(copy.name);
  }
  lo_.url = "http://127.0.0.1:" + std::to_string(srv_->port());
  lo_.body = image;
  lo_.content_type = "image/jpeg";
}

results::RunRecords ProbeServer::load(uint32_t concurrency, uint32_t n,
                                      loadgen::LoadStats* stats,
                                      std::function<void()> before_start) {
  workloads::Workload w;
  w.closed_loop = true;
  w.concurrency = concurrency;
  for (uint32_t i = 0; i < n; ++i) w.models.push_back(i % uint32_t(lo_.model_names.size()));
  loadgen::LoadOptions lo = lo_;
  lo.before_start = std::move(before_start);
  return loadgen::run_load(lo, w, stats);
}

}  // namespace servelab::experiments
