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
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <thread>
#include <vector>

#include "config/profile_yaml.h"
#include "config/run_config.h"
#include "engine/server/group_definition.h"
#include "engine/server/http_server.h"
#include "engine/server/model_manifest.h"
#include "engine/server/register_request.h"
#include "results/offline_cache.h"
#include "experiments/backends.h"
#include "experiments/real_cluster.h"
#include "calibration/profiler.h"
#ifdef SERVELAB_EXP_PROFILER
#include "calibration/calibration.h"
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

// The engine's executing tier against its offline optimum over the measured run (the
// simulator's simulation.cache_optimum, the same switch), where the tier is limited.
std::optional<results::CacheOptimum> cache_optimum_of(const std::optional<CacheTrace>& trace,
                                                      const config::RunConfig& rc) {
  if (!trace || trace->room.unlimited() || !rc.simulation.cache_optimum ||
      rc.engine.private_weights)
    return std::nullopt;
  results::CacheOptimum o{tier_name(trace->tier)};
  add_cache_optimum(*trace, trace->sizes, o);
  return o;
}

class RealBackend : public Backend {
 public:
  explicit RealBackend(RealBackendOptions o) : o_(std::move(o)) {
    if (o_.profile.empty()) o_.profile = local_profile_path();
  }

  // The config names profile entries (`profile_model`); in real mode they are model files,
  // and parsing needs a profile that lists them, so the local one is measured when missing.
  void prepare(const std::vector<YAML::Node>& configs) override {
    ensure_profiles_of(o_.profile, configs, o_.models_dir, o_.image,
                       [](const YAML::Node&) { return true; });
    body_ = read_file(o_.image.empty() ? o_.models_dir + "/" + kDefaultRequestImage : o_.image);
  }

#ifdef SERVELAB_EXP_PROFILER
  void calibrate(const YAML::Node& config, const std::string& path) override {
    YAML::Node c = YAML::Clone(config);
    c["profile"] = fs::absolute(o_.profile).string();
    const config::RunConfig rc = config::parse_run_config(c, "", o_.base_dir);
    ProfileOptions po;  // the engine's threads: the default, as in run()
    po.models_dir = o_.models_dir;
    po.image = request_image_of(config, o_.models_dir, o_.image);
    po.models = profile_models_of(config["models"]);
    po.batch_sizes = probe_sizes(rc.engine.control.max_batch);
    // Served misses only where a run can miss: more models than the executing tier holds.
    const TierBudget& room = rc.engine.control.budgets[int(rc.engine.control.exec_tier)];
    const bool can_miss = room.bytes != UINT64_MAX || rc.models.size() > room.models;
    po.served_miss_requests = can_miss ? kCalibrationServedMisses : 0;
    write_calibrated_profile(o_.profile, path, po, probes_);
  }
#endif

  results::RunRecords run(const YAML::Node& config, uint64_t seed,
                          const std::string& run_dir) override {
    YAML::Node c = YAML::Clone(config);
    c["profile"] = fs::absolute(o_.profile).string();  // model files, not costs, matter here
    const config::RunConfig rc = config::parse_run_config(c, "", o_.base_dir, seed);
    std::ofstream(run_dir + "/config.yaml") << YAML::Dump(config::emit_run_config(rc)) << "\n";
    workloads::Workload w = workloads::generate(rc.workload);
    loadgen::LoadOptions lo;
    lo.body = body_;
    lo.content_type = "image/jpeg";
    lo.slo = rc.engine.slo;
    for (const auto& m : rc.models) {
      lo.model_names.push_back(m.name);
      lo.model_slo.push_back(m.slo);  // registered with the model too: see register_models
    }
    for (const auto& g : rc.groups) lo.model_names.push_back(g.name);  // after the models
    if (!rc.workload.images.empty()) lo.labelled = labelled_images(rc.workload.images);
    if (!o_.url.empty()) {
      lo.url = o_.url;
      return loadgen::run_load(lo, w);
    }
    if (rc.cluster.servers > 1 || rc.cluster.front != "servelab")
      return run_cluster(rc, w, std::move(lo), run_dir);

    runtime::EngineOptions eo;
    eo.control = rc.engine.control;
    eo.default_contexts = rc.engine.contexts;
    eo.slo = rc.engine.slo;  // deadlines reach the controller as in the simulator
    eo.private_weights = rc.engine.private_weights;
    // Batch-cost priors (rafiki-greedy).
    eo.cost_profile = std::make_shared<const CostProfile>(config::load_profile(o_.profile));
    eo.executor = "torch";
    eo.device = "cpu";
    server::ServerOptions so;
    so.store_dir = run_dir + "/model-store";
    so.log = o_.verbose;
    so.model_root = weights_root(rc);
    server::HttpServer srv(so, eo);
    srv.start();
    register_models(srv, rc);
    define_groups(srv, rc);
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
    srv.engine().start_cache_trace();
    results::RunRecords records = loadgen::run_load(lo, w, &stats);
    records.cache_optimum = cache_optimum_of(srv.engine().take_cache_trace(), rc);
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
  // A config with `cluster:` (more than one server, or a front named): its servers as
  // `servelab serve` processes and the front end before them (real_cluster.h); the load goes
  // through the front end. servelab route's /metrics are kept in run_dir/route-metrics.txt;
  // nginx's and HAProxy's config and stderr in run_dir/front-KIND/. The servers' own
  // counters (loads, batches) stay theirs.
  results::RunRecords run_cluster(const config::RunConfig& rc, const workloads::Workload& w,
                                  loadgen::LoadOptions lo, const std::string& run_dir) const {
    RealClusterOptions co;  // the servers run this process's executable: servelab's
    co.models_dir = o_.models_dir;
    co.run_dir = run_dir;
    co.config_file = run_dir + "/config.yaml";
    co.profile = o_.profile;
    co.verbose = o_.verbose;
    RealCluster cluster(rc, w, co);
    lo.url = cluster.url();
    loadgen::LoadStats stats;
    results::RunRecords records = loadgen::run_load(lo, w, &stats);
    cluster.add_copy_rows(records, stats.route_seq);  // before the metrics: losers settled
    if (const std::string m = cluster.route_metrics(); !m.empty())
      std::ofstream(run_dir + "/route-metrics.txt") << m;
    if (records.requests.empty() && !stats.first_error.empty())
      throw std::runtime_error("load generator: " + stats.first_error);
    return records;
  }

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
      spec.slo = m.slo;  // none: the engine's default (engine.slo_ms)
      // The manifest's preprocessing and labels, as the profile was measured with (and as
      // a scored run, workload.images, needs them).
      try {
        server::apply_manifest(spec,
                               (fs::path(o_.models_dir) / (m.profile_model + ".json")).string());
      } catch (const std::exception& e) {
        throw ExperimentError(std::string("real mode: ") + e.what());
      }
      srv.engine().register_model(spec);
    }
  }

  // Defines the config's groups through the server's own POST /groups path, each member's
  // accuracy (the vote's tie-break) from the accuracy table's single-model entries, so that
  // ties go to the more accurate member as the simulator's table assumes (Rafiki's rule).
  static void define_groups(server::HttpServer& srv, const config::RunConfig& rc) {
    for (const config::GroupEntry& g : rc.groups) {
      server::GroupDefinition d;
      d.name = g.name;
      d.members = g.members;
      for (size_t k = 0; k < g.members.size(); ++k)
        d.accuracy.push_back(g.accuracy.of(MemberMask(1) << k));
      d.subset = g.subset;
      d.dispatch = g.dispatch;  // a weights file: absolute, under weights_root(rc)
      try {
        srv.define_group(server::group_definition_json(d).dump());
      } catch (const std::runtime_error& e) {
        throw ExperimentError("real mode: group '" + g.name + "': " + e.what());
      }
    }
  }

  // The folder of the dispatchers' weights files, the server's --model-root for them (the
  // server reads a file a group definition names only under its root); "" without one.
  static std::string weights_root(const config::RunConfig& rc) {
    std::string root;
    for (const config::GroupEntry& g : rc.groups) {
      if (!g.dispatch.params.has("weights")) continue;
      const std::string dir =
          fs::path(g.dispatch.params.get_string("weights", "")).parent_path().string();
      if (!root.empty() && dir != root)
        throw ExperimentError("real mode: the groups' dispatch weights files must share one "
                              "folder (the server's model root): " + root + " and " + dir);
      root = dir;
    }
    return root;
  }

  // workload.images, relative to the models folder (make-models writes them there).
  std::vector<loadgen::LabelledBody> labelled_images(const std::string& images) const {
    const fs::path dir = fs::path(images).is_absolute() ? fs::path(images)
                                                          : fs::path(o_.models_dir) / images;
    try {
      return loadgen::read_labelled_images(dir.string());
    } catch (const std::invalid_argument& e) {
      throw ExperimentError(std::string("real mode: workload.images: ") + e.what());
    }
  }

  RealBackendOptions o_;
  std::string body_;
  std::vector<config::ProfileFile> probes_;  // --calibrate-each: its probes so far, in order
};

}  // namespace

std::unique_ptr<Backend> make_real_backend(const RealBackendOptions& options) {
  return std::make_unique<RealBackend>(options);
}

}  // namespace servelab::experiments
