// Test helper: an in-process server (TestServer's tweak) whose models are the profiled
// executor's, each batch sleeping a fixed time, on one worker that batches nothing: a request
// runs while the next one waits in its queue. Register each model with the file of `noop`.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "engine/control/cost_profile.h"
#include "engine/runtime/engine.h"
#include "engine/server/http_server.h"

namespace servelab::testing {

// `batch_seconds`: each model's name and the time one of its batches takes.
inline auto slow_model_server(std::map<std::string, double> batch_seconds) {
  auto profile = std::make_shared<CostProfile>();
  for (const auto& [name, seconds] : batch_seconds) {
    ModelProfile m;
    m.name = name;
    m.size_bytes = 1;
    BatchCost one;
    one.batch = 1;
    one.mean = seconds;
    m.batches = {one};
    m.set_load_time(Tier::Disk, Tier::Host, 0);
    profile->models.push_back(std::move(m));
  }
  return [profile](runtime::EngineOptions& e, server::ServerOptions&) {
    e.executor = "profiled";
    e.cost_profile = profile;
    e.control.workers = 1;
    e.control.batching = {"none", {}};
  };
}

}  // namespace servelab::testing
