// Reading and writing profile files (schema in docs/config.md, "Profile files"): each model's
// batch and load costs (engine/control/cost_profile.h) and the front-end terms the simulator
// and the profiler own (calibration/terms/front_end_profile.h).
#pragma once

#include <string>

#include <yaml-cpp/yaml.h>

#include "engine/control/cost_profile.h"
#include "calibration/terms/front_end_profile.h"
#include "calibration/terms/idle_slowdown.h"
#include "calibration/terms/speed_course.h"

namespace servelab::config {

// A whole profile file: the costs and the front-end profile measured with them.
struct ProfileFile {
  CostProfile costs;
  FrontEndProfile front_end;
  // `speed_drift: {fast, slow}`: the machine's speed course (calibration/terms/speed_course.h), as
  // the profiler measured it; none in paper profiles and older files.
  SpeedDrift speed_drift{};
  // `idle_slowdown: [{gap_ms, factor}, ...]`: a batch's cost after its worker idled, over its
  // cost back to back (calibration/terms/idle_slowdown.h); none in paper profiles and older files.
  IdleSlowdown idle_slowdown{};
  // Cores' worth of CPU other processes took while the profiler measured (negative: unknown).
  // Written into the file's `source` line by the profiler; not read back.
  double background_cores = -1;
};

// Reads a profile file. Throws ConfigError naming the file, line and key on any problem
// (unreadable file, unknown key, bad number, unsorted batch sizes).
ProfileFile load_profile_file(const std::string& path);
// Same, from an already parsed node; `file` is used in messages only.
ProfileFile parse_profile_file(const YAML::Node& root, const std::string& file);
// The costs only (the engine's profiled executor), checked as strictly.
CostProfile load_profile(const std::string& path);
CostProfile parse_profile(const YAML::Node& root, const std::string& file);
// The inverse of parse_profile_file, for writing a measured profile (`servelab measure`):
// cold bursts in the top-level `front_end` section only.
YAML::Node profile_to_yaml(const ProfileFile& profile);

}  // namespace servelab::config
