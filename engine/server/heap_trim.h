// Gives freed heap memory back to the system. The process keeps freed memory by design, so
// that forward passes reuse their buffers (engine/runtime/allocator.h); without a trim, a
// burst of large bodies or answers would stay resident for the rest of the process's life,
// and so would an idle server's forward buffers.
// - After large frees (request bodies, answers of a megabyte or more): a trim runs `delay`
//   after the first large free that finds none scheduled, on the io_context, so at most one
//   trim per `delay` and none while no large buffer is freed.
// - When idle (`idle_delay` above zero): a trim runs once no request has been in flight for
//   `idle_delay` (checked once per delay, so one to two delays after the last answer); while
//   requests keep coming or one is in flight, none runs. The first batch after it faults its
//   buffers in again, so the delay is long against a batch (jemalloc's decay is 10 s).
// Thread-safety: freed(), request_started() and went_idle() from any thread; construct and
// destroy with the io_context's owner.
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <utility>

namespace servelab::server {

class HeapTrimmer {
 public:
  static constexpr size_t kLargeBytes = size_t{1} << 20;  // smaller frees are ignored

  // `in_flight`: the requests handed to the handler and not yet answered (the owner's count,
  // which outlives the trimmer). `trimmed` (may be empty) hears of each trim, on an IO thread:
  // true for one after idleness.
  HeapTrimmer(boost::asio::io_context& ioc, std::chrono::milliseconds delay,
              std::chrono::milliseconds idle_delay, const std::atomic<int>& in_flight,
              std::function<void(bool idle)> trimmed = {})
      : timer_(ioc), idle_timer_(ioc), delay_(delay), idle_delay_(idle_delay),
        in_flight_(in_flight), trimmed_(std::move(trimmed)) {}

  // A buffer of `bytes` was freed (or is about to be); schedules a trim when it is large.
  void freed(size_t bytes);
  // A request was handed to the handler.
  void request_started() { requests_.fetch_add(1, std::memory_order_relaxed); }
  // The in-flight count reached zero: schedules the idle check unless one is scheduled.
  void went_idle();
  // Trims now (glibc: malloc_trim; elsewhere nothing). Any thread.
  static void trim();

 private:
  void check_idle_after_delay();
  void trim_and_tell(bool idle);

  boost::asio::steady_timer timer_;       // used by one scheduler at a time (`scheduled_`)
  boost::asio::steady_timer idle_timer_;  // likewise (`idle_scheduled_`)
  std::chrono::milliseconds delay_;
  std::chrono::milliseconds idle_delay_;
  const std::atomic<int>& in_flight_;
  std::function<void(bool idle)> trimmed_;
  std::atomic<bool> scheduled_{false};
  std::atomic<bool> idle_scheduled_{false};
  std::atomic<uint64_t> requests_{0};  // started so far: tells an idle spell from a busy one
};

}  // namespace servelab::server
