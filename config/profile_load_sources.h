// A profile model's `load_sources_ms`: its Disk -> Host load by source, phase by phase
// (engine/control/load_sources.h), in milliseconds:
//   load_sources_ms:
//     store: {read: 0.4, deserialize: 25.3, copy: 0, share: 6.7, first_batch: 2.1}
// Every phase optional (0); every source optional.
#pragma once

#include <yaml-cpp/yaml.h>

#include "config/yaml_util.h"
#include "engine/control/cost_profile.h"

namespace servelab::config {

// Reads `n` (absent: nothing measured) into m.load_sources; fails naming the key.
void parse_load_sources(const YAML::Node& n, const Where& w, ModelProfile& m);
// The measured sources of `m` (a map; empty when none is).
YAML::Node load_sources_to_yaml(const ModelProfile& m);

}  // namespace servelab::config
