// Profile files: where this machine's measured profile lives, what it lacks, and saving a
// measurement into it. No LibTorch here (profiler.cpp measures).
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "config/profile_yaml.h"
#ifdef SERVELAB_EXP_PROFILER
#include "engine/runtime/allocator.h"
#endif
#include "calibration/profiler.h"

namespace servelab::experiments {

std::string local_profile_path() {
  char host[256] = "localhost";
  gethostname(host, sizeof host - 1);
  return std::string(SERVELAB_SOURCE_DIR) + "/experiments/profiles/local/" + host + ".yaml";
}

namespace {

// `measured` over `merged`: its models' costs and overheads replace or join the old ones; its
// cold bursts, when it has any, its speed course and its slowdown after idling replace the
// file's (the latest probe of this machine).
void merge_profile(config::ProfileFile& merged, const config::ProfileFile& measured) {
  std::vector<ModelProfile>& models = merged.costs.models;
  for (const auto& m : measured.costs.models) {
    auto it = std::find_if(models.begin(), models.end(),
                           [&](const ModelProfile& x) { return x.name == m.name; });
    if (it != models.end()) *it = m;
    else models.push_back(m);
    merged.front_end.overheads.erase(m.name);
    if (const RequestOverhead* o = measured.front_end.overhead(m.name))
      merged.front_end.overheads[m.name] = *o;
  }
  if (!measured.front_end.cold_bursts.empty())
    merged.front_end.cold_bursts = measured.front_end.cold_bursts;
  merged.speed_drift = measured.speed_drift;  // the latest measurement of this machine
  merged.idle_slowdown = measured.idle_slowdown;
}

}  // namespace

void save_profile(const std::string& path, const config::ProfileFile& measured,
                  const ProfileOptions& o) {
  namespace fs = std::filesystem;
  config::ProfileFile merged;
  if (fs::exists(path)) merged = config::load_profile_file(path);
  merge_profile(merged, measured);
  YAML::Node root = config::profile_to_yaml(merged);
  char host[256] = "localhost";
  gethostname(host, sizeof host - 1);
  std::string sizes;
  for (uint32_t b : o.batch_sizes) sizes += (sizes.empty() ? "" : ",") + std::to_string(b);
  root["description"] = "Measured by `servelab measure` on this machine (CPU, LibTorch).";
  root["source"] = std::string("host ") + host + ", " + std::to_string(o.threads) +
                   " intra-op thread(s), batch sizes " + sizes + ", " +
                   std::to_string(o.batches.samples) + " or more samples per size (1 s of passes for cheap sizes)";
#ifdef SERVELAB_EXP_PROFILER  // the engine's allocator regime; a build without it measures nothing
  root["source"] = root["source"].as<std::string>() + ", " + runtime::keep_freed_memory();
#endif
  if (measured.background_cores >= 0) {
    char load[96];
    std::snprintf(load, sizeof load, ", other processes %.2f cores meanwhile",
                  measured.background_cores);
    root["source"] = root["source"].as<std::string>() + load;
  }
  if (fs::path(path).has_parent_path()) fs::create_directories(fs::path(path).parent_path());
  YAML::Emitter e;
  e << root;
  std::ofstream out(path);
  out << e.c_str() << "\n";
  if (!out) throw std::runtime_error("profile: cannot write " + path);
}

std::string profile_image_name(const std::string& image, const std::string& models_dir) {
  namespace fs = std::filesystem;
  if (image.empty()) return kDefaultRequestImage;
  const fs::path file = fs::weakly_canonical(fs::absolute(image));
  const fs::path dir = fs::weakly_canonical(fs::absolute(models_dir));
  const fs::path rel = file.lexically_relative(dir);
  const bool inside = !rel.empty() && *rel.begin() != "..";
  return inside ? rel.generic_string() : file.generic_string();
}

std::vector<std::string> missing_models(const std::string& path,
                                        const std::vector<std::string>& names,
                                        const std::string& image) {
  if (!std::filesystem::exists(path)) return names;
  const config::ProfileFile p = config::load_profile_file(path);
  std::vector<std::string> missing;
  for (const auto& n : names) {
    const RequestOverhead* o = p.front_end.overhead(n);
    const bool stale_image =
        o && !image.empty() && (o->image.empty() ? kDefaultRequestImage : o->image) != image;
    if (!p.costs.find(n) || !o || (o->before == 0 && o->after == 0) ||
        p.front_end.cold_bursts.empty() || stale_image)
      missing.push_back(n);
  }
  return missing;
}

}  // namespace servelab::experiments
