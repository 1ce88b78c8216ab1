// Sim mode: the simulator library in-process, on the profile the config names or, when it
// names none (or `profile: local`), on this machine's measured profile.
#include <filesystem>
#include <fstream>

#include "config/profile_yaml.h"
#include "experiments/backends.h"
#include "calibration/profiler.h"
#include "calibration/speed_match.h"
#include "simulator/sim_config.h"

namespace servelab::experiments {
namespace {

bool uses_local_profile(const YAML::Node& config) {
  return !config["profile"] || config["profile"].as<std::string>() == "local";
}

class SimBackend : public Backend {
 public:
  explicit SimBackend(SimBackendOptions o) : o_(std::move(o)) {
    if (o_.profile.empty()) o_.profile = local_profile_path();
  }

  void prepare(const std::vector<YAML::Node>& configs) override {
    ensure_profiles_of(o_.profile, configs, o_.models_dir, o_.image, uses_local_profile);
  }

  // Simulated requests cost microseconds, real ones milliseconds: keep the ETA honest when a
  // sweep runs both modes.
  double weight(const YAML::Node& config) const override {
    return config_requests(config) * 1e-3;
  }

  results::RunRecords run(const YAML::Node& config, uint64_t seed,
                          const std::string& run_dir) override {
    YAML::Node c = YAML::Clone(config);
    if (uses_local_profile(c)) c["profile"] = std::filesystem::absolute(o_.profile).string();
    // Relative paths in the config (profile, traces) resolve against the experiment's folder.
    sim::SimConfig sc = sim::parse_sim_config(c, "", o_.base_dir, seed);
    workloads::Workload w = workloads::generate(sc.run.workload);
    sim::SimulationResult r = sim::simulate(sc.setup, w);
    std::ofstream(run_dir + "/config.yaml") << YAML::Dump(sc.resolved) << "\n";
    if (!r.violations.empty())
      throw std::runtime_error("simulator reported a contract violation: " + r.violations[0]);
    return std::move(r.records);
  }

  SpeedMatch match_speed(const YAML::Node& config, uint64_t seed,
                         const results::RunRecords& real) const override {
    YAML::Node c = YAML::Clone(config);
    if (uses_local_profile(c)) c["profile"] = std::filesystem::absolute(o_.profile).string();
    const sim::SimulationSetup setup = sim::parse_sim_config(c, "", o_.base_dir, seed).setup;
    SpeedMatch m;
    m.factor = measured_speed_factor(setup, real);
    m.trace = measured_speed_trace(setup, real, m.factor);
    m.jitter = measured_jitter(setup, real, m.factor, m.trace);
    return m;
  }

 private:
  SimBackendOptions o_;
};

}  // namespace

std::unique_ptr<Backend> make_sim_backend(const SimBackendOptions& options) {
  return std::make_unique<SimBackend>(options);
}

}  // namespace servelab::experiments
