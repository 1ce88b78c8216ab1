// The process's allocator regime for LibTorch on CPU. A forward pass allocates activation
// buffers of megabytes and frees them at its end; glibc serves blocks that large with mmap and
// returns them with munmap, so every pass faults its buffers in afresh, and how often that
// happens depends on glibc's adaptive threshold, i.e. on the process's history. The profiler
// and the engine then measured different costs for the same batch (CPU batches 3-6x costlier
// in the server than in a warm profiling loop, at batch 32). Keeping freed memory (mmap and
// trim thresholds raised) gives both one regime: the profile predicts the server.
#pragma once

namespace servelab::runtime {

// Once per process (thread-safe): raises glibc's mmap and trim thresholds, unless the user
// chose them (MALLOC_MMAP_THRESHOLD_ / MALLOC_TRIM_THRESHOLD_ set) or set
// SERVELAB_MALLOC=default. Returns a one-line description of the regime in force.
const char* keep_freed_memory();

}  // namespace servelab::runtime
