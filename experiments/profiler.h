// `servelab profile`: measures each model's cost on this machine in the profile format the
// simulator reads (engine/control/cost_profile.h, config/profile_yaml.h): batch latency per
// batch size (mean, stddev, raw samples), the disk->host load time (really deserializing the
// TorchScript file), and size (parameter + buffer bytes). LibTorch stays in profiler.cpp.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "engine/control/cost_profile.h"

namespace servelab::experiments {

struct ProfileOptions {
  std::string models_dir = "models";        // holds <name>.pt and <name>.json manifests
  std::vector<std::string> models;          // names; must be non-empty
  std::vector<uint32_t> batch_sizes{1, 2, 4, 8, 16, 32};
  uint32_t samples = 10;                    // timed forward passes per batch size
  uint32_t warmup = 2;                      // untimed passes per batch size
  double max_seconds_per_size = 3.0;        // stop sampling a size after this much time
  uint32_t load_samples = 3;                // timed loads per model
  int threads = 1;                          // LibTorch intra-op threads (the engine default)
};

// Measures every model. Throws std::runtime_error naming the model and file on a missing or
// broken model. `log` (may be empty) receives one line per measured item.
CostProfile measure_profile(const ProfileOptions& options,
                            const std::function<void(const std::string&)>& log = {});

// Writes `measured` to `path` (creating folders), keeping the models of an existing file at
// `path` that were not measured again; records host, threads and batch sizes in `source`.
void save_profile(const std::string& path, const CostProfile& measured, const ProfileOptions& o);

// The default location of this machine's measured profile:
// <source>/experiments/profiles/local/<hostname>.yaml (gitignored).
std::string local_profile_path();

// Models the profile file at `path` lacks (all of `names` if it does not exist).
std::vector<std::string> missing_models(const std::string& path,
                                        const std::vector<std::string>& names);

}  // namespace servelab::experiments
