// Factories for the bodies that this build lacks: they return nullptr, and the runner says
// which mode is unavailable. The real factories live in sim_backend.cpp and real_backend.cpp.
#include "experiments/backends.h"

#include <cstdio>

#include "experiments/profiler.h"

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

#ifdef SERVELAB_EXP_PROFILER
void ensure_profile_with(const std::string& path, ProfileOptions po, bool remeasure) {
  std::vector<std::string> missing = remeasure ? po.models : missing_models(path, po.models);
  if (missing.empty()) return;
  po.models = missing;
  std::string names;
  for (const auto& m : missing) names += " " + m;
  std::fprintf(stderr, "run: measuring the cost profile of%s on this machine (%s)\n",
               names.c_str(), path.c_str());
  save_profile(path, measure_profile(po), po);
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
void ensure_profile(const std::string& path, const std::vector<std::string>& models,
                    const std::string&, bool remeasure, const std::string&) {
  if (!remeasure && missing_models(path, models).empty()) return;
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
