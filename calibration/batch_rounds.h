// The order in which the profiler times batch sizes (measure_batches): rounds over all sizes,
// so each size's samples span the whole measurement and its spread includes the machine's
// drift, not one quiet moment. In a round each size takes a block of passes of its own size,
// about `block_seconds` long (one pass at least), the first of them untimed where a pass is
// short (below `rewarm_below_seconds`) and a different size ran last: a pass right after a
// larger one can run slower, which serving rarely pays, its batches following batches of
// about their own size. Pure bookkeeping, no clock: the caller runs each pass and reports its
// time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace servelab::experiments {

struct BatchRoundsOptions {
  uint32_t samples = 6;               // timed passes per size, at least (3 at the very least)
  uint32_t max_samples = 200;
  double min_seconds_per_size = 1.0;  // cheap sizes sample on until they spent this much
  double max_seconds_per_size = 2.0;  // and stop after this much
  double block_seconds = 0.2;
  double rewarm_below_seconds = 0.5;
};

class BatchRounds {
 public:
  struct Pass {
    size_t size;  // index into the sizes
    bool timed;   // false: a re-warming pass, its time not a sample
  };
  // `warm_seconds[k]`: an untimed pass of size k's time, from the caller's warm-up (0 when
  // none: the first block of that size then re-warms).
  BatchRounds(BatchRoundsOptions o, std::vector<double> warm_seconds);

  // The next pass to run; nullopt when every size has its samples.
  std::optional<Pass> next();
  // The time of the pass next() returned last.
  void record(double seconds);

  const std::vector<double>& samples(size_t size) const { return samples_[size]; }

 private:
  bool wants_more(size_t k) const;
  std::optional<size_t> next_size(size_t from) const;  // the first size >= from wanting more

  BatchRoundsOptions o_;
  std::vector<double> last_;    // each size's latest pass, timed or not
  std::vector<double> spent_;   // seconds of timed passes per size
  std::vector<std::vector<double>> samples_;
  std::optional<size_t> previous_;  // the size of the last pass run
  size_t current_ = 0;              // the size whose block runs
  double block_ = 0;                // timed seconds of the current block
  bool in_block_ = false;
  bool pending_timed_ = false;      // what next() returned last
};

}  // namespace servelab::experiments
