#include "simulator/shared_cores.h"

#include <algorithm>
#include <cassert>
#include <iterator>

#include "simulator/front_end.h"
#include "simulator/server.h"

namespace servelab::sim {

namespace {
// Jobs whose work left is within this of the least end together (equal batches started
// together); the least itself ends whatever rounding left of it.
constexpr Time kSameEnd = 1e-12;
}  // namespace

SharedCores::SharedCores(Simulation& sim, uint32_t cores) : sim_(sim), cores_(cores) {
  assert(cores >= 1);
}

double SharedCores::speed() const {
  const double n = double(jobs_.size());
  return n <= cores_ ? 1.0 : cores_ / n;
}

void SharedCores::start(Server& server, WorkerId worker, Time work, Time now) {
  add(Job{&server, worker, nullptr, 0, std::max<Time>(work, 0)}, now);
}

void SharedCores::start_io(FrontEnd& front, RequestId id, Time work, Time now) {
  add(Job{nullptr, 0, &front, id, std::max<Time>(work, 0)}, now);
}

void SharedCores::add(Job job, Time now) {
  advance(now);
  jobs_.push_back(job);
  reschedule(now);
}

void SharedCores::advance(Time now) {
  const Time done = (now - last_change_) * speed();
  last_change_ = now;
  if (done <= 0) return;
  for (Job& j : jobs_) j.remaining -= done;
}

void SharedCores::reschedule(Time now) {
  ++generation_;
  if (jobs_.empty()) return;
  Time least = jobs_.front().remaining;
  for (const Job& j : jobs_) least = std::min(least, j.remaining);
  sim_.schedule<&SharedCores::on_next_done>(now + std::max<Time>(least, 0) / speed(), this,
                                            generation_);
}

// Ends the job this event was scheduled for (nothing changed since: same generation) and any
// that end with it, in the order they started, then tells their servers or front ends; they
// may start their next job from inside (start(), start_io(), which see the new speed; events
// do not nest, so ended_ is not touched meanwhile).
void SharedCores::on_next_done(uint64_t generation, Time now) {
  if (generation != generation_) return;
  advance(now);
  Time least = jobs_.front().remaining;
  for (const Job& j : jobs_) least = std::min(least, j.remaining);
  auto done = [least](const Job& j) { return j.remaining <= least + kSameEnd; };
  ended_.clear();
  std::copy_if(jobs_.begin(), jobs_.end(), std::back_inserter(ended_), done);
  std::erase_if(jobs_, done);
  reschedule(now);
  for (const Job& j : ended_) {
    if (j.front) j.front->on_io_done(j.request, now);
    else j.server->on_batch_done(j.worker, now);
  }
}

}  // namespace servelab::sim
