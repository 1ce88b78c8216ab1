// A calibration probe run just before a point's real runs (`servelab run --calibrate-each`,
// scripts/check-sim-vs-real): the simulator then predicts the point on the machine's speed of
// that moment, measured before the runs it predicts and taken from nothing of theirs.
// On a shared machine the speed drifts by more than the simulator's error within minutes, and
// not by one factor: batch 8 slowed by half while batch 1 held (two profiles 15 min apart).
#pragma once

#include <string>
#include <vector>

#include "config/profile_yaml.h"
#include "experiments/profiler.h"

namespace servelab::experiments {

// Batch sizes the probe times: powers of two up to `max_batch` (and max_batch itself).
std::vector<uint32_t> probe_sizes(uint32_t max_batch);

// `base` with each model of `probe` rescaled: at every probed size b the batch cost becomes
// probe(b) / base(b) times the base's (mean, stddev and samples), and between probed sizes by
// the ratio interpolated linearly in b (outside them: the nearest one's), so the base's dense
// shape is kept while its speed is today's. A load pair both measured takes the probe's time,
// its samples scaled by probe / base. Models `probe` lacks are left as they are.
config::ProfileFile rescale_to_probe(const config::ProfileFile& base, const CostProfile& probe);

// Times options.models' batches and a few loads now (options.batch_sizes, short sampling, no
// request overheads or bursts) and writes rescale_to_probe(the profile at `base`, that) to `out`.
void write_calibrated_profile(const std::string& base, const std::string& out,
                              ProfileOptions options);

}  // namespace servelab::experiments
