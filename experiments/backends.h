// The two bodies an experiment runs in. Each factory returns nullptr when that body is not
// part of this build (the simulator, or the engine + server + load generator).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "experiments/runner.h"

namespace servelab::experiments {

struct SimBackendOptions {
  // Profile for configs that name none (`profile:`); empty: this machine's measured profile
  // (local_profile_path()), measured first for the models it lacks.
  std::string profile;
  std::string models_dir = "models";  // where the profiler finds models to measure
  std::string base_dir = ".";         // relative paths in configs resolve against it
  bool verbose = false;
};

struct RealBackendOptions {
  std::string url;                    // non-empty: drive this server instead of starting one
  std::string models_dir = "models";  // TorchScript files for the in-process engine
  std::string profile;                // as SimBackendOptions::profile (real mode parses the
                                      // same config, which names profile entries)
  std::string base_dir = ".";
  std::string image;                  // request body; default <models_dir>/images/gradient.jpg
  bool verbose = false;
};

// Makes sure the profile at `path` has every model in `models`, measuring the missing ones
// (models_dir/<name>.pt) with the profiler first; `remeasure`: measure all of them again
// (calibration against the machine as it is now). `image`: the request image real mode
// sends (empty: models_dir/images/gradient.jpg). Throws when it cannot.
void ensure_profile(const std::string& path, const std::vector<std::string>& models,
                    const std::string& models_dir, bool remeasure = false,
                    const std::string& image = "");

// The profile entries (= model files in real mode) a config's `models:` section uses.
std::vector<std::string> profile_models_of(const YAML::Node& models);

std::unique_ptr<Backend> make_sim_backend(const SimBackendOptions& options);
std::unique_ptr<Backend> make_real_backend(const RealBackendOptions& options);

}  // namespace servelab::experiments
