// Real mode: an in-process engine behind the real HTTP server (127.0.0.1, ephemeral port),
// driven over HTTP by the load generator library, or a running server at --url.
// The config is parsed by the same typed parser as in sim mode (config/run_config.h), so both
// bodies get the same controller settings, models and workload (same seeds, hence the same
// schedule).
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include "config/run_config.h"
#include "engine/server/http_server.h"
#include "experiments/backends.h"
#include "experiments/profiler.h"
#ifdef SERVELAB_EXP_PROFILER
#include "experiments/calibration.h"
#endif
#include "workloads/loadgen/loadgen.h"

namespace servelab::experiments {
namespace {
namespace fs = std::filesystem;

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ExperimentError("real mode: cannot read the request image '" + path + "'");
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Sums the engine's per-model counters (loads, evictions, hits, misses, batches).
ModelCounters totals(runtime::Engine& engine) {
  ModelCounters t;
  for (const auto& m : engine.models()) {
    t.loads += m.counters.loads;
    t.evictions += m.counters.evictions;
    t.hits += m.counters.hits;
    t.misses += m.counters.misses;
    t.batches += m.counters.batches;
    t.completed += m.counters.completed;
  }
  return t;
}

// The run config's warm-up (config::WarmUpSection): requests before the measured run, not
// recorded. A burst of cold first requests also reaches the controller more spread out than
// the simulator predicts, which changes how it is batched. Only models resident in the
// executing tier get them, in model order: the cache then holds the same models in the same
// recency order as the simulated start. The pause after lets rate estimates forget the
// warm-up (rafiqi's threshold decays by alpha every quantum).
void warm_up(server::HttpServer& srv, loadgen::LoadOptions lo, const config::RunConfig& rc) {
  const config::WarmUpSection& wu = rc.warm_up;
  const bool device = srv.engine().cuda_available();
  workloads::Workload w;
  w.closed_loop = true;
  w.concurrency = wu.clients;
  const auto status = srv.engine().models();
  for (size_t i = 0; i < lo.model_names.size(); ++i)
    for (const runtime::ModelStatus& m : status)
      if (m.name == lo.model_names[i] && (device ? m.resident_device : m.resident_host))
        for (uint32_t k = 0; k < wu.requests_per_model; ++k) w.models.push_back(uint32_t(i));
  if (w.models.empty()) return;
  lo.before_start = nullptr;
  loadgen::run_load(lo, w);
  const double pause = std::max(wu.min_pause_s, wu.pause_quanta * rc.engine.control.quantum);
  std::this_thread::sleep_for(std::chrono::duration<double>(pause));
}

class RealBackend : public Backend {
 public:
  explicit RealBackend(RealBackendOptions o) : o_(std::move(o)) {
    if (o_.profile.empty()) o_.profile = local_profile_path();
    if (o_.image.empty()) o_.image = o_.models_dir + "/images/gradient.jpg";
  }

  // The config names profile entries (`profile_model`); in real mode they are model files,
  // and parsing needs a profile that lists them, so the local one is measured when missing.
  void prepare(const std::vector<YAML::Node>& configs) override {
    std::vector<std::string> needed;
    for (const auto& c : configs)
      for (const auto& m : profile_models_of(c["models"]))
        if (std::find(needed.begin(), needed.end(), m) == needed.end()) needed.push_back(m);
    ensure_profile(o_.profile, needed, o_.models_dir, false, o_.image);
    body_ = read_file(o_.image);
  }

#ifdef SERVELAB_EXP_PROFILER
  void calibrate(const YAML::Node& config, const std::string& path) override {
    YAML::Node c = YAML::Clone(config);
    c["profile"] = fs::absolute(o_.profile).string();
    const config::RunConfig rc = config::parse_run_config(c, "", o_.base_dir);
    ProfileOptions po;  // the engine's threads: the default, as in run()
    po.models_dir = o_.models_dir;
    po.image = o_.image;
    po.models = profile_models_of(config["models"]);
    po.batch_sizes = probe_sizes(rc.engine.control.max_batch);
    write_calibrated_profile(o_.profile, path, po);
  }
#endif

  results::RunRecords run(const YAML::Node& config, uint64_t seed,
                          const std::string& run_dir) override {
    YAML::Node c = YAML::Clone(config);
    c["profile"] = fs::absolute(o_.profile).string();  // model files, not costs, matter here
    const config::RunConfig rc = config::parse_run_config(c, "", o_.base_dir, seed);
    if (!rc.groups.empty())
      throw ConfigError("groups (model ensembles) run in simulation only so far: use --mode sim");
    std::ofstream(run_dir + "/config.yaml") << YAML::Dump(config::emit_run_config(rc)) << "\n";
    workloads::Workload w = workloads::generate(rc.workload);
    loadgen::LoadOptions lo;
    lo.body = body_;
    lo.content_type = "image/jpeg";
    lo.slo = rc.engine.slo;
    for (const auto& m : rc.models) lo.model_names.push_back(m.name);
    if (!o_.url.empty()) {
      lo.url = o_.url;
      return loadgen::run_load(lo, w);
    }

    runtime::EngineOptions eo;
    eo.control = rc.engine.control;
    eo.default_contexts = rc.engine.contexts;
    eo.slo = rc.engine.slo;  // deadlines reach the controller as in the simulator
    eo.profile_file = fs::absolute(o_.profile).string();  // batch-cost priors (rafiki-greedy)
    eo.executor = "torch";
    eo.device = "cpu";
    server::ServerOptions so;
    so.store_dir = run_dir + "/model-store";
    so.log = o_.verbose;
    server::HttpServer srv(so, eo);
    srv.start();
    register_models(srv, rc);
    lo.url = "http://127.0.0.1:" + std::to_string(srv.port());
    warm_up(srv, lo, rc);
    ModelCounters before = totals(srv.engine());
    // Start just after a quantum tick, as the simulated run does (t = 0, ticks at k*quantum):
    // where the ticks fall against the first burst of requests decides how it is batched,
    // and with one worker that split persists for the whole run. The load generator calls
    // this once its connections are open, right before its clock starts.
    if (Time q = rc.engine.control.quantum; q > 0) {
      lo.before_start = [&srv, q] { sleep_until_tick(srv.engine(), q); };
    }
    loadgen::LoadStats stats;
    results::RunRecords records = loadgen::run_load(lo, w, &stats);
    ModelCounters after = totals(srv.engine());
    records.loads = after.loads - before.loads;
    records.evictions = after.evictions - before.evictions;
    records.hits = after.hits - before.hits;
    records.misses = after.misses - before.misses;
    uint64_t batches = after.batches - before.batches;
    if (batches) records.mean_batch_size = double(after.completed - before.completed) / batches;
    srv.stop();
    fs::remove_all(so.store_dir);
    if (records.requests.empty() && !stats.first_error.empty())
      throw std::runtime_error("load generator: " + stats.first_error);
    return records;
  }

 private:
  // Registers in model order, as the simulator preloads: the first models that fit stay
  // resident in the executing tier, the others start on disk.
  void register_models(server::HttpServer& srv, const config::RunConfig& rc) const {
    for (const config::ModelEntry& m : rc.models) {
      runtime::ModelSpec spec;
      spec.name = m.name;
      spec.file = (fs::path(o_.models_dir) / (m.profile_model + ".pt")).string();
      if (!fs::exists(spec.file))
        throw ExperimentError("real mode: model file " + spec.file +
                              " not found (export models with scripts/make-models)");
      spec.contexts = rc.contexts_of(m);
      srv.engine().register_model(spec);
    }
  }

  RealBackendOptions o_;
  std::string body_;
};

}  // namespace

std::unique_ptr<Backend> make_real_backend(const RealBackendOptions& options) {
  return std::make_unique<RealBackend>(options);
}

}  // namespace servelab::experiments
