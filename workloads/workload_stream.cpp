#include "workloads/workload_stream.h"

#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "workloads/access_patterns.h"
#include "workloads/arrivals.h"

namespace servelab::workloads {

namespace {
// Requests per hand-off: few hand-offs (each may wake a thread, tens of microseconds on a
// virtual machine), and a small first chunk, which the stream's constructor waits for.
constexpr size_t kFirstChunk = 1024;
constexpr size_t kChunk = 16384;  // 256 KiB
constexpr size_t kAhead = 3;     // chunks drawn and not yet taken, at most
}  // namespace

// Threading: the thread owns `times` and `models` once it runs; `drawn`, `spare`, `ended`,
// `stopping` and `error` are guarded by `mu`. A chunk holds the draws in the order generate()
// makes them (a time, then its model), so the schedule is the same whoever draws it.
struct WorkloadStream::Drawer {
  std::unique_ptr<detail::TimeStream> times;
  std::unique_ptr<detail::ModelStream> models;
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::vector<ScheduledRequest>> drawn;   // full chunks, oldest first
  std::vector<std::vector<ScheduledRequest>> spare;  // taken chunks, back for their capacity
  bool ended = false;     // the last chunk is drawn (the schedule ended, or a draw threw)
  bool stopping = false;  // the stream is going away
  std::exception_ptr error;  // a draw's, handed on after the chunks drawn before it
  uint64_t chunks_drawn = 0;  // the thread's
  std::thread thread;

  ~Drawer() { stop(); }

  void start() {
    thread = std::thread([this] { run(); });
  }

  void run() {
    std::unique_lock<std::mutex> lock(mu);
    while (!ended) {
      cv.wait(lock, [&] { return stopping || drawn.size() < kAhead; });
      if (stopping) return;
      std::vector<ScheduledRequest> chunk = take_spare();
      lock.unlock();
      std::exception_ptr failed;
      const bool last = draw(chunk, failed);
      lock.lock();
      drawn.push_back(std::move(chunk));
      ended = last;
      error = failed;
      cv.notify_all();
    }
  }

  std::vector<ScheduledRequest> take_spare() {
    if (spare.empty()) return {};
    std::vector<ScheduledRequest> chunk = std::move(spare.back());
    spare.pop_back();
    return chunk;
  }

  // Fills `chunk` with the next requests; true when the schedule ended in it, or a draw threw
  // (`failed`: the requests before it stay).
  bool draw(std::vector<ScheduledRequest>& chunk, std::exception_ptr& failed) {
    const size_t size = chunks_drawn++ == 0 ? kFirstChunk : kChunk;
    chunk.resize(size);
    size_t n = 0;
    try {
      for (; n < size; ++n) {
        if (!times->next(chunk[n].time)) break;
        chunk[n].model = models->next();
      }
    } catch (...) {
      failed = std::current_exception();
    }
    chunk.resize(n);
    return n < size || failed;
  }

  // The next chunk, once drawn (`used`, the previous one, goes back for its capacity); empty
  // once the schedule has ended. Rethrows a draw's error where it happened.
  std::vector<ScheduledRequest> next_chunk(std::vector<ScheduledRequest> used) {
    std::unique_lock<std::mutex> lock(mu);
    if (used.capacity() > 0) spare.push_back(std::move(used));
    cv.wait(lock, [&] { return !drawn.empty() || ended; });
    if (drawn.empty()) {
      if (error) std::rethrow_exception(error);
      return {};
    }
    std::vector<ScheduledRequest> chunk = std::move(drawn.front());
    drawn.pop_front();
    cv.notify_all();
    return chunk;
  }

  void stop() {
    {
      std::lock_guard<std::mutex> lock(mu);
      stopping = true;
    }
    cv.notify_all();
    if (thread.joinable()) thread.join();
  }
};

WorkloadStream::WorkloadStream(const WorkloadSpec& spec)
    : spec_(spec), warmup_(spec.warmup), drawer_(std::make_unique<Drawer>()) {
  validate(spec);
  closed_loop_ = detail::arrival_process(spec.arrival.type).closed_loop();
  if (closed_loop_) {
    samples_per_query_ = spec.arrival.samples_per_query;
    concurrency_ = samples_per_query_ ? samples_per_query_ : spec.arrival.concurrency;
    drawer_->times = detail::think_time_stream(spec.arrival, spec.requests);
  } else {
    drawer_->times = detail::send_time_stream(spec.arrival, spec.requests, spec.duration);
  }
  drawer_->models = detail::model_stream(spec.access, spec.num_models,
                                         detail::rows_before_window(spec.arrival, spec.access));
  drawer_->start();
  refill();
  if (chunk_.empty() && !closed_loop_)
    throw std::invalid_argument("workload: the arrival process produced no requests "
                                "(duration too short or trace empty)");
}

void WorkloadStream::refill() {
  chunk_ = drawer_->next_chunk(std::move(chunk_));
  chunk_next_ = 0;
}

WorkloadStream::~WorkloadStream() = default;  // the drawer stops its thread
WorkloadStream::WorkloadStream(WorkloadStream&&) noexcept = default;
WorkloadStream& WorkloadStream::operator=(WorkloadStream&&) noexcept = default;

std::vector<uint64_t> WorkloadStream::model_counts(size_t models) const {
  // The schedule's draws again, in its order (a time, then its model), on this thread: no
  // drawing thread, no chunks, only the counts kept.
  std::vector<uint64_t> counts(models, 0);
  const auto times = closed_loop_ ? detail::think_time_stream(spec_.arrival, spec_.requests)
                                  : detail::send_time_stream(spec_.arrival, spec_.requests,
                                                             spec_.duration);
  const auto draws = detail::model_stream(spec_.access, spec_.num_models,
                                          detail::rows_before_window(spec_.arrival, spec_.access));
  uint64_t produced = 0;
  for (double t; times->next(t); ++produced) {
    const uint32_t m = draws->next();
    if (m < models) ++counts[m];
  }
  if (!closed_loop_) detail::fail_if_capped(spec_.arrival, spec_.requests, produced);
  return counts;
}

bool WorkloadStream::next(ScheduledRequest& out) {
  if (chunk_next_ == chunk_.size()) refill();
  if (chunk_next_ == chunk_.size()) {
    if (!closed_loop_) detail::fail_if_capped(spec_.arrival, spec_.requests, produced_);
    return false;
  }
  out = chunk_[chunk_next_++];
  ++produced_;
  return true;
}

}  // namespace servelab::workloads
