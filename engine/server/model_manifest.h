// A model's manifest (models/<name>.json, written by scripts/make-models): the preprocessing
// and labels it asks for, as POST /register takes them. The profiler measures a model with
// them and real runs register it with them, so that both serve the same inputs (tiny_cnn's
// 32x32, the digits' 8x8 without resizing). Pure function of the files; thread-safe.
#pragma once

#include <string>

#include "engine/runtime/engine.h"

namespace servelab::server {

// Sets `spec`'s preprocessing and labels from the manifest at `path`; without a manifest the
// engine's defaults stay. Throws std::runtime_error for a manifest or labels file it cannot
// read or a preprocessing spec POST /register would refuse.
void apply_manifest(runtime::ModelSpec& spec, const std::string& path);

}  // namespace servelab::server
