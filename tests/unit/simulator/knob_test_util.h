// Helpers for the tests of the simulation section's profile knobs (idle_slowdown,
// served_extra, served_miss): a one-model profile file and a config that reads it.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>

#include "simulator/sim_config.h"

namespace servelab::sim::test {

// profile.yaml in `dir`: model m, a 20 ms batch of one, a 30 ms disk->host load; `overhead`
// (when not empty) is the inside of its request_overhead_ms after before/after/preprocess
// (", served_extra: 2.5"), `tail` is appended to the file as it is.
inline void write_knob_profile(const std::filesystem::path& dir, const std::string& overhead,
                               const std::string& tail = "") {
  std::ofstream f(dir / "profile.yaml");
  f << "models:\n  m:\n    size_bytes: 1000\n    batch_latency_ms:\n"
       "      - {batch: 1, mean: 20, stddev: 0}\n    load_ms: {disk->host: 30}\n";
  if (!overhead.empty())
    f << "    request_overhead_ms: {before: 2, after: 1, preprocess: 1" << overhead << "}\n";
  f << tail;
}

// One worker in event mode, 5 requests of a closed loop of one, noise none plus `knob`
// (", machine: {without: [served_extra]}"), on dir/profile.yaml.
inline SimConfig knob_config(const std::filesystem::path& dir, const std::string& knob) {
  return parse_sim_config(
      YAML::Load("models: [m]\nprofile: profile.yaml\n"
                 "engine: {workers: 1, quantum_ms: 0, exec_tier: host}\n"
                 "workload: {requests: 5, arrival: {type: closed, concurrency: 1}}\n"
                 "simulation: {noise: none" + knob + "}\n"),
      "c.yaml", dir.string());
}

}  // namespace servelab::sim::test
