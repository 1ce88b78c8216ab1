// The process's allocator regime for LibTorch on CPU. A forward pass allocates activation
// buffers of megabytes and frees them at its end; glibc serves blocks that large with mmap and
// returns them with munmap, so every pass faults its buffers in afresh, and how often that
// happens depends on glibc's adaptive threshold, i.e. on the process's history. The profiler
// and the engine then measure different costs for the same batch. Keeping freed memory (mmap
// and trim thresholds raised) gives both one regime: the profile predicts the server.
// And one arena: a thread other than the main one allocates from an arena of its own, whose
// heaps glibc caps at 64 MiB, so a larger buffer is mmap'd and unmapped on every pass whatever
// the thresholds. Which threads get such arenas varies from process to process, and with it a
// batch's cost; with one arena it does not. (Measurements: lab/cpu-sim-vs-real.md, memory
// allocation.)
#pragma once

namespace servelab::runtime {

// Once per process (thread-safe; also run before main by the library's static initializer,
// before any thread allocates): raises glibc's mmap and trim thresholds and keeps one arena,
// unless the user chose (MALLOC_MMAP_THRESHOLD_, MALLOC_TRIM_THRESHOLD_, MALLOC_ARENA_MAX or
// glibc.malloc tunables set) or set SERVELAB_MALLOC=default. Returns a one-line description of
// the regime in force.
const char* keep_freed_memory();

// Gives the freed memory the process keeps back to the system now (glibc: malloc_trim; else
// nothing). For the end of a passing high-water mark that no forward pass reuses, e.g. a
// model's load; any thread.
void give_back_freed_memory();

}  // namespace servelab::runtime
