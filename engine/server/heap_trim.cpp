#include "engine/server/heap_trim.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace servelab::server {

void HeapTrimmer::freed(size_t bytes) {
  if (bytes < kLargeBytes || scheduled_.exchange(true)) return;
  timer_.expires_after(delay_);
  timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;
    scheduled_ = false;  // frees from now on schedule the next trim
    trim_and_tell(false);
  });
}

void HeapTrimmer::went_idle() {
  if (idle_delay_.count() <= 0 || idle_scheduled_.exchange(true)) return;
  check_idle_after_delay();
}

// Runs while `idle_scheduled_` is held; the timer's handler gives it up before it decides,
// so that a request answered meanwhile schedules the next check itself.
void HeapTrimmer::check_idle_after_delay() {
  const uint64_t seen = requests_.load();
  idle_timer_.expires_after(idle_delay_);
  idle_timer_.async_wait([this, seen](const boost::system::error_code& ec) {
    idle_scheduled_ = false;
    if (ec || in_flight_.load() > 0) return;  // the last of those answered schedules again
    if (requests_.load() == seen) return trim_and_tell(true);  // nothing came all the delay
    went_idle();  // requests came and went: wait the delay again from now
  });
}

void HeapTrimmer::trim_and_tell(bool idle) {
  trim();
  if (trimmed_) trimmed_(idle);
}

void HeapTrimmer::trim() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

}  // namespace servelab::server
