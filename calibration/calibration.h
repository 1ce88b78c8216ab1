// Calibration probes before real runs (`servelab run --calibrate-each`,
// scripts/check-sim-vs-real): the simulator predicts each run on the machine's speed as
// measured before it, taken from nothing of the run's own.
// On a shared machine the speed drifts by more than the simulator's error within minutes, and
// not by one factor: batch 8 slowed by half while batch 1 held (two profiles 15 min apart).
// It also switches between states (a squeezenet batch of one at about 20 or 26-29 ms) that
// hold for seconds: one short probe foretells the next minute no better than the profile does
// (s36: errors of both signs, up to 25%). So a prediction uses every probe taken so far, with
// the profile itself counted as one: their mean estimates the speed the machine keeps over
// minutes, which is what a run of a minute and a mean over spread-out repetitions see.
#pragma once

#include <string>
#include <vector>

#include "config/profile_yaml.h"
#include "calibration/profiler.h"

namespace servelab::experiments {

// Batch sizes the probe times: powers of two up to `max_batch` (and max_batch itself).
std::vector<uint32_t> probe_sizes(uint32_t max_batch);

// `base` with each model of `probe` rescaled: at every probed size b the batch cost becomes
// probe(b) / base(b) times the base's (mean, stddev and samples), and between probed sizes by
// the ratio interpolated linearly in b (outside them: the nearest one's), so the base's dense
// shape is kept while its speed is today's. A load pair both measured takes the probe's time,
// its samples scaled by probe / base. Models `probe` lacks are left as they are.
config::ProfileFile rescale_to_probe(const config::ProfileFile& base, const CostProfile& probe);

// The mean of `base` and every probe in `probes`: for each model of `base` that a probe
// measured, at each size some probe measured, the mean over base.batch_latency(size) and those
// probes' means; each load pair the base measured, the mean over it and the probes that
// measured it. Only the means (rescale_to_probe takes nothing else from a probe).
CostProfile pool_probes(const CostProfile& base, const std::vector<CostProfile>& probes);

// Each model's served miss (RequestOverhead::served_miss_load and served_miss_batch) that
// `base` measured: the mean over it and the probes that measured one, written into `out`'s,
// with their waits' samples together (the base's first) where the base recorded samples.
// A sequential run's misses are all served misses, so the batch probes alone would leave its
// prediction where the profile was, however the misses' cost moved since.
void pool_served_misses(config::ProfileFile& out, const config::ProfileFile& base,
                        const std::vector<config::ProfileFile>& probes);

// Times options.models' batches, a few loads and options.served_miss_requests served misses
// now (options.batch_sizes, short sampling, no bursts; the request overheads it measures are
// not used), adds that probe to `probes` (the ones taken before it in this experiment) and writes
// rescale_to_probe(the profile at `base`, pool_probes(it, probes)) with pool_served_misses to
// `out`.
constexpr uint32_t kCalibrationServedMisses = 16;  // what a probe serves where runs can miss
void write_calibrated_profile(const std::string& base, const std::string& out,
                              ProfileOptions options, std::vector<config::ProfileFile>& probes);

}  // namespace servelab::experiments
