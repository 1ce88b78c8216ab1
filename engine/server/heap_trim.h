// Gives freed heap memory back to the system after large buffers (request bodies, answers of
// a megabyte or more) were freed. The process keeps freed memory by design, so that forward
// passes reuse their buffers (engine/runtime/allocator.h); without a trim, a burst of large
// bodies or answers would stay resident for the rest of the process's life. A trim runs
// `delay` after the first large free that finds none scheduled, on the io_context, so at most
// one trim per `delay` and none while no large buffer is freed.
// Thread-safety: freed() from any thread; construct and destroy with the io_context's owner.
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstddef>

namespace servelab::server {

class HeapTrimmer {
 public:
  static constexpr size_t kLargeBytes = size_t{1} << 20;  // smaller frees are ignored

  HeapTrimmer(boost::asio::io_context& ioc, std::chrono::milliseconds delay)
      : timer_(ioc), delay_(delay) {}

  // A buffer of `bytes` was freed (or is about to be); schedules a trim when it is large.
  void freed(size_t bytes);
  // Trims now (glibc: malloc_trim; elsewhere nothing). Any thread.
  static void trim();

 private:
  boost::asio::steady_timer timer_;  // used by one scheduler at a time (`scheduled_`)
  std::chrono::milliseconds delay_;
  std::atomic<bool> scheduled_{false};
};

}  // namespace servelab::server
