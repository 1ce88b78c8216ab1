// Factories for the bodies that this build lacks: they return nullptr, and the runner says
// which mode is unavailable. The real factories live in sim_backend.cpp and real_backend.cpp.
#include "experiments/backends.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <stdexcept>

#include "calibration/profile_plan.h"
#include "calibration/profiler.h"

namespace servelab::experiments {

std::vector<std::string> profile_models_of(const YAML::Node& models) {
  std::vector<std::string> out;
  if (models.IsMap() && models["profile_model"]) {
    out.push_back(models["profile_model"].as<std::string>());
  } else if (models.IsSequence()) {
    for (const auto& m : models) {
      if (m.IsScalar()) out.push_back(m.as<std::string>());
      else if (m["profile_model"]) out.push_back(m["profile_model"].as<std::string>());
      else if (m["name"]) out.push_back(m["name"].as<std::string>());
    }
  }
  return out;
}

std::string request_image_of(const YAML::Node& config, const std::string& models_dir,
                             const std::string& image_option) {
  namespace fs = std::filesystem;
  if (!image_option.empty()) return image_option;
  const YAML::Node& images = config["workload"]["images"];
  if (images && images.IsScalar()) {
    const fs::path dir = fs::path(images.Scalar()).is_absolute()
                             ? fs::path(images.Scalar())
                             : fs::path(models_dir) / images.Scalar();
    std::vector<fs::path> files;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec))
      if (e.is_regular_file()) files.push_back(e.path());
    if (!files.empty()) return std::min_element(files.begin(), files.end())->string();
  }
  return (fs::path(models_dir) / kDefaultRequestImage).string();
}

void ensure_profiles_of(const std::string& path, const std::vector<YAML::Node>& configs,
                        const std::string& models_dir, const std::string& image_option,
                        const std::function<bool(const YAML::Node&)>& uses) {
  std::vector<std::pair<std::string, std::vector<std::string>>> by_image;  // in config order
  for (const auto& c : configs) {
    if (!uses(c)) continue;
    const std::string image = request_image_of(c, models_dir, image_option);
    auto it = std::find_if(by_image.begin(), by_image.end(),
                           [&](const auto& g) { return g.first == image; });
    if (it == by_image.end()) it = by_image.insert(by_image.end(), {image, {}});
    for (const auto& m : profile_models_of(c["models"]))
      if (std::find(it->second.begin(), it->second.end(), m) == it->second.end())
        it->second.push_back(m);
  }
  for (const auto& [image, models] : by_image) ensure_profile(path, models, models_dir, false, image);
}

#ifdef SERVELAB_EXP_PROFILER
PhaseProgress profile_progress(const ProfileOptions& options, const std::string& prefix,
                               FILE* out) {
  std::vector<PhaseProgress::Phase> phases;
  for (const auto& p : plan_profile(options)) phases.push_back({p.what, p.planned_seconds});
  return PhaseProgress(prefix, std::move(phases), out);
}

void ensure_profile_with(const std::string& path, ProfileOptions po, bool remeasure) {
  std::vector<std::string> missing =
      remeasure ? po.models
                : missing_models(path, po.models, profile_image_name(po.image, po.models_dir));
  if (missing.empty()) return;
  po.models = missing;
  std::string names;
  for (const auto& m : missing) names += " " + m;
  std::fprintf(stderr, "run: measuring the cost profile of%s on this machine (%s)\n",
               names.c_str(), path.c_str());
  PhaseProgress progress = profile_progress(po, "run: profile");
  save_profile(path, measure_profile(po, {}, [&](size_t k) { progress.started(k); }), po);
}

void ensure_profile(const std::string& path, const std::vector<std::string>& models,
                    const std::string& models_dir, bool remeasure, const std::string& image) {
  ProfileOptions po;
  po.models_dir = models_dir;
  po.image = image;
  po.models = models;
  ensure_profile_with(path, po, remeasure);
}
#else
PhaseProgress profile_progress(const ProfileOptions&, const std::string&, FILE*) {
  throw std::logic_error("profile progress: this build has no profiler (LibTorch)");
}

void ensure_profile(const std::string& path, const std::vector<std::string>& models,
                    const std::string& models_dir, bool remeasure, const std::string& image) {
  if (!remeasure && missing_models(path, models, profile_image_name(image, models_dir)).empty())
    return;
  throw ExperimentError("no measured profile for the models at " + path +
                        " and this build has no LibTorch to measure it; name a profile file "
                        "in the config (profile:)");
}
#endif

#ifndef SERVELAB_EXP_SIM
std::unique_ptr<Backend> make_sim_backend(const SimBackendOptions&) { return nullptr; }
#endif
#ifndef SERVELAB_EXP_REAL
std::unique_ptr<Backend> make_real_backend(const RealBackendOptions&) { return nullptr; }
#endif
}  // namespace servelab::experiments
