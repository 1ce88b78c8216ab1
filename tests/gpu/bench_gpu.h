// The GPU benchmarks of issue 17 (bench_gpu): P5a swap (the engine's host -> device load
// against raw pinned copies of the same bytes), P5b batching (the engine's batched inference
// against the best raw LibTorch loop) and P5c (the GPU cost profile for the simulator). Each
// writes JSON records (and P5c a profile YAML) into the output folder; scripts/gpu-report
// turns them into the report. Variants are measured side by side, in alternating rounds.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace servelab::gpu {

struct BenchOptions {
  std::string out_dir = ".";
  std::string gpu = "unknown GPU";      // the device's name, for the profile's description
  double seconds_per_variant = 0.2;     // timed per variant and round (P5b)
  int rounds = 9;                       // alternating rounds; the median round is reported
};

// JSON text for flat records (the device machine has no JSON library).
std::string jstr(const std::string& s);
std::string jnum(double v);
std::string jobj(const std::vector<std::pair<std::string, std::string>>& fields);
// Writes `records` as a JSON array to out_dir/name and says where.
void write_records(const BenchOptions& o, const std::string& name,
                   const std::vector<std::string>& records);

void bench_swap(const BenchOptions& o);     // P5a: swap.json
void bench_batch(const BenchOptions& o);    // P5b: batch.json
void bench_paired(const BenchOptions& o);   // P5b paired, one worker: paired.json
void bench_profile(const BenchOptions& o);  // P5c: profile.json, gpu-profile.yaml
void bench_sweep(const BenchOptions& o);    // Rafiqi figure 5 on the real engine: sweep.json

}  // namespace servelab::gpu
