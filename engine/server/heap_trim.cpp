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
    trim();
  });
}

void HeapTrimmer::trim() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

}  // namespace servelab::server
