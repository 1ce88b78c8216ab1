#include "calibration/batch_rounds.h"

#include <algorithm>
#include <utility>

namespace servelab::experiments {

BatchRounds::BatchRounds(BatchRoundsOptions o, std::vector<double> warm_seconds)
    : o_(o),
      last_(std::move(warm_seconds)),
      spent_(last_.size(), 0),
      samples_(last_.size()) {}

bool BatchRounds::wants_more(size_t k) const {
  const size_t n = samples_[k].size();
  if (n < 3) return true;
  if (spent_[k] > o_.max_seconds_per_size || n >= std::max(o_.samples, o_.max_samples))
    return false;
  return n < o_.samples || spent_[k] < o_.min_seconds_per_size;
}

std::optional<size_t> BatchRounds::next_size(size_t from) const {
  for (size_t k = from; k < samples_.size(); ++k)
    if (wants_more(k)) return k;
  return std::nullopt;
}

std::optional<BatchRounds::Pass> BatchRounds::next() {
  if (in_block_ && block_ < o_.block_seconds && wants_more(current_))
    return pending_timed_ = true, Pass{current_, true};
  // The block is over: the next size of this round, or the first of the next round.
  std::optional<size_t> k = next_size(in_block_ ? current_ + 1 : current_);
  if (!k) k = next_size(0);
  if (!k) return std::nullopt;
  current_ = *k;
  in_block_ = true;
  block_ = 0;
  pending_timed_ = previous_ == current_ || last_[current_] >= o_.rewarm_below_seconds;
  return Pass{current_, pending_timed_};
}

void BatchRounds::record(double seconds) {
  last_[current_] = seconds;
  previous_ = current_;
  if (!pending_timed_) return;
  samples_[current_].push_back(seconds);
  spent_[current_] += seconds;
  block_ += seconds;
}

}  // namespace servelab::experiments
