// Measures the activation workspace of a forward pass: the peak number of bytes allocated
// through LibTorch's CPU allocator by the calling thread while a probe is alive.
//
// The first probe installs a counting wrapper around c10's CPU allocator (once per process,
// never removed). Allocations made while no probe is active on the thread pass straight
// through, so the cost outside registration is one thread-local read per allocation.
// Only the calling thread is counted: scratch memory of intra-op worker threads and memory
// that bypasses the c10 allocator (e.g. oneDNN's own scratchpads) is missed, so the result
// is a lower bound on the true peak; input and output tensors allocated inside the probe
// are included. If the allocator cannot be wrapped, peak_bytes() returns 0.
#pragma once

#include <cstdint>
#include <memory>

namespace servelab::runtime {

class WorkspaceProbe {
 public:
  WorkspaceProbe();   // starts counting on this thread; probes do not nest
  ~WorkspaceProbe();  // stops counting (tensors still alive are then forgotten)
  WorkspaceProbe(const WorkspaceProbe&) = delete;
  WorkspaceProbe& operator=(const WorkspaceProbe&) = delete;

  uint64_t peak_bytes() const;     // highest live total since construction
  uint64_t current_bytes() const;  // live bytes allocated since construction

  struct Counter;  // shared with the deleters of counted allocations

 private:
  std::shared_ptr<Counter> counter_;
};

}  // namespace servelab::runtime
