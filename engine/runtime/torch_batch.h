// The inputs of one forward pass of the LibTorch executor as one batch tensor on the device
// that executes it. Includes LibTorch: only torch_executor.cpp and torch_batch.cpp include
// this header.
// Thread-safety: free functions; the CPU paths reuse a batch tensor per worker thread.
#pragma once

#include <torch/script.h>

#include <vector>

#include "engine/runtime/executor.h"

namespace servelab::runtime {

// CUDA: uint8 crops become (x - 255 mean) * (1 / (255 std)) on the device.
struct DeviceNormalization {
  at::Tensor mean255, inv_std255;
};
DeviceNormalization device_normalization(const Preprocess& pp);

// Stacks the inputs into one batch on the executing device (`on_device`: CUDA, else the
// CPU). uint8 crops are normalized there with LibTorch ops (batched); a batch mixing crops
// and float inputs normalizes the crops one by one on the CPU first. Throws
// std::runtime_error when the inputs of one batch differ in shape.
at::Tensor make_batch(const Preprocess& pp, const DeviceNormalization& norm, bool on_device,
                      const std::vector<const Input*>& inputs);

}  // namespace servelab::runtime
