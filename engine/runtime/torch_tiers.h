// Copies of TorchScript modules between tiers (torch_tiers.cpp), for the LibTorch executor.
// Includes LibTorch: only torch_executor.cpp and torch_tiers.cpp include this header.
#pragma once

#include <torch/script.h>

#include <cstdint>
#include <memory>

namespace servelab::runtime {

using ModulePtr = std::shared_ptr<torch::jit::Module>;

// Parameter and buffer bytes of a module, each storage counted once.
uint64_t tensor_bytes(const torch::jit::Module& m);

// A copy of `m` whose parameters and buffers are packed into one host buffer (each tensor's
// slot aligned to 256 bytes): with `pinned`, the host copy of a model that a CUDA device
// executes, so that a host -> device load is one DMA of the whole buffer (pinned memory
// needs CUDA; unpinned serves the CPU tests of this copy).
ModulePtr packed(const torch::jit::Module& m, bool pinned);

// A copy of `m`'s module objects sharing its tensors (no tensor is copied) and its code: a
// new instance of the same types, whose tensors the caller may then replace.
ModulePtr structural_copy(const torch::jit::Module& m);

// A copy of `host` on `device`: each storage of its tensors is copied once (one copy for a
// packed module) with a non_blocking copy (from pinned memory: an asynchronous DMA on the
// current stream; the caller synchronizes), and the copy's tensors are views into the copies.
// The host module is unchanged.
ModulePtr copy_to_device(const torch::jit::Module& host, torch::Device device);

}  // namespace servelab::runtime
