// The two bodies an experiment runs in. Each factory returns nullptr when that body is not
// part of this build (the simulator, or the engine + server + load generator).
#pragma once

#include <functional>
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
  std::string image;  // the run's --image: what a local profile's overheads are measured with
                      // (empty: request_image_of each config)
};

struct RealBackendOptions {
  std::string url;                    // non-empty: drive this server instead of starting one
  std::string models_dir = "models";  // TorchScript files for the in-process engine
  std::string profile;                // as SimBackendOptions::profile (real mode parses the
                                      // same config, which names profile entries)
  std::string base_dir = ".";
  std::string image;  // request body; default <models_dir>/images/gradient.jpg (a config's
                      // workload.images replace it, one labelled image per request)
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

// The request image that a config's requests carry, for the profiler to measure the front end
// with: `image_option` (the run's --image) when given, else the first image (by name) of the
// config's `workload.images` folder (relative to models_dir), else
// models_dir/images/gradient.jpg. Decoding is most of a request's front-end cost, so a profile
// measured with another image mispredicts it (5x for a digit against the JPEG).
std::string request_image_of(const YAML::Node& config, const std::string& models_dir,
                             const std::string& image_option = "");

// Calls ensure_profile once per request image for the models of `configs` that need the
// profile (`uses(config)`), so that each model's overheads are measured with the image its
// requests carry.
void ensure_profiles_of(const std::string& path, const std::vector<YAML::Node>& configs,
                        const std::string& models_dir, const std::string& image_option,
                        const std::function<bool(const YAML::Node&)>& uses);

std::unique_ptr<Backend> make_sim_backend(const SimBackendOptions& options);
std::unique_ptr<Backend> make_real_backend(const RealBackendOptions& options);

}  // namespace servelab::experiments
