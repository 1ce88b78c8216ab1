#include "engine/runtime/torch_batch.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace servelab::runtime {
namespace {

// This worker thread's float batch tensor of last time when its shape matches and nothing
// else holds it, else a new one (kept for next time).
at::Tensor batch_tensor(const std::vector<int64_t>& shape) {
  thread_local at::Tensor cached;
  if (!cached.defined() || cached.sizes() != at::IntArrayRef(shape) ||
      cached.storage().use_count() != 1)
    cached = torch::empty(shape, torch::kFloat);
  return cached;
}

// The float inputs stacked into this worker thread's batch tensor of last time when the
// shape matches and nothing else holds it. A fresh multi-megabyte batch per forward made
// glibc hand memory back and forth: ~100,000 page faults per 2 s on the worker (in the
// conv kernels writing fresh pages) and a third of the throughput of a plain loop.
at::Tensor reused_batch(const std::vector<at::Tensor>& items) {
  std::vector<int64_t> shape = items.front().sizes().vec();
  shape.insert(shape.begin(), static_cast<int64_t>(items.size()));
  at::Tensor batch = batch_tensor(shape);
  return torch::stack_out(batch, items);
}

// Float inputs on the CPU, copied straight into the reused batch tensor: a tensor per
// item, their autograd wrappers and the stack kernel cost about as much as the forward of
// a trivial model (profile of `servelab serve` under the bench-server load, noop model).
at::Tensor copied_batch(const std::vector<const Input*>& inputs) {
  const Input& first = *inputs.front();
  for (const Input* in : inputs)
    if (in->channels != first.channels || in->height != first.height ||
        in->width != first.width || in->chw.size() != first.chw.size())
      throw std::runtime_error("the inputs of one batch differ in shape");
  const size_t item = first.chw.size();
  if (item != static_cast<size_t>(first.channels) * first.height * first.width)
    throw std::runtime_error("an input's size does not match its shape");
  at::Tensor batch = batch_tensor({static_cast<int64_t>(inputs.size()), first.channels,
                                   first.height, first.width});
  float* out = batch.data_ptr<float>();
  for (size_t i = 0; i < inputs.size(); ++i)
    std::memcpy(out + i * item, inputs[i]->chw.data(), item * sizeof(float));
  return batch;
}

// A batch for the device: the inputs gathered into a pinned staging buffer (one memcpy
// each), copied to the device in one DMA, and uint8 crops normalized there. The buffer
// comes from LibTorch's caching host allocator, which reuses a block only once the copies
// issued from it are done. (A thread_local buffer crashed at thread exit: its deleter ran
// after CUDA's own thread state was gone.)
at::Tensor device_batch(const DeviceNormalization& norm, const std::vector<const Input*>& inputs,
                        bool u8) {
  const Input& first = *inputs.front();
  const size_t item = u8 ? first.hwc.size() : first.chw.size() * sizeof(float);
  for (const Input* in : inputs)
    if (in->channels != first.channels || in->height != first.height ||
        in->width != first.width ||
        (u8 ? in->hwc.size() : in->chw.size() * sizeof(float)) != item)
      throw std::runtime_error("the inputs of one batch differ in shape");
  const int64_t n = static_cast<int64_t>(inputs.size());
  const auto pinned = torch::TensorOptions().dtype(torch::kUInt8).pinned_memory(true);
  at::Tensor bytes = torch::empty({static_cast<int64_t>(item * inputs.size())}, pinned);
  uint8_t* dst = bytes.data_ptr<uint8_t>();
  for (size_t i = 0; i < inputs.size(); ++i)
    std::memcpy(dst + i * item, u8 ? static_cast<const void*>(inputs[i]->hwc.data())
                                   : static_cast<const void*>(inputs[i]->chw.data()), item);
  at::Tensor host =
      u8 ? bytes.view({n, first.height, first.width, first.channels})
         : bytes.view(torch::kFloat).view({n, first.channels, first.height, first.width});
  at::Tensor batch = host.to(torch::kCUDA, /*non_blocking=*/true);
  if (!u8) return batch;
  return batch.permute({0, 3, 1, 2}).to(torch::kFloat).sub_(norm.mean255).mul_(norm.inv_std255);
}
}  // namespace

DeviceNormalization device_normalization(const Preprocess& pp) {
  auto opts = torch::TensorOptions().dtype(torch::kFloat).device(torch::kCUDA);
  DeviceNormalization n;
  n.mean255 = torch::tensor({255 * pp.mean[0], 255 * pp.mean[1], 255 * pp.mean[2]}, opts)
                  .view({1, 3, 1, 1});
  n.inv_std255 = torch::tensor({1 / (255 * pp.std[0]), 1 / (255 * pp.std[1]),
                                1 / (255 * pp.std[2])}, opts).view({1, 3, 1, 1});
  return n;
}

at::Tensor make_batch(const Preprocess& pp, const DeviceNormalization& norm, bool on_device,
                      const std::vector<const Input*>& inputs) {
  const bool all_u8 = std::all_of(inputs.begin(), inputs.end(),
                                  [](const Input* in) { return !in->hwc.empty(); });
  const bool all_float = std::none_of(inputs.begin(), inputs.end(),
                                      [](const Input* in) { return !in->hwc.empty(); });
  if (on_device && (all_u8 || all_float)) return device_batch(norm, inputs, all_u8);
  torch::Device dev = on_device ? torch::Device(torch::kCUDA) : torch::kCPU;
  auto normalize = [&](at::Tensor nhwc_u8, torch::Device d) {
    auto opts = torch::TensorOptions().dtype(torch::kFloat).device(d);
    at::Tensor mean = torch::tensor({pp.mean[0], pp.mean[1], pp.mean[2]}, opts).view({1, 3, 1, 1});
    at::Tensor stdv = torch::tensor({pp.std[0], pp.std[1], pp.std[2]}, opts).view({1, 3, 1, 1});
    return nhwc_u8.permute({0, 3, 1, 2}).to(torch::kFloat).div_(255.0f).sub_(mean).div_(stdv);
  };
  auto u8 = [](const Input* in) {
    return torch::from_blob(const_cast<uint8_t*>(in->hwc.data()),
                            {in->height, in->width, in->channels}, torch::kUInt8);
  };
  if (all_float && dev == torch::kCPU) return copied_batch(inputs);
  std::vector<at::Tensor> items;
  items.reserve(inputs.size());
  for (const Input* in : inputs) {
    if (all_u8)
      items.push_back(u8(in));
    else if (!in->hwc.empty())
      items.push_back(normalize(u8(in).unsqueeze(0), torch::kCPU).squeeze(0));
    else
      items.push_back(torch::from_blob(const_cast<float*>(in->chw.data()),
                                       {in->channels, in->height, in->width}, torch::kFloat));
  }
  at::Tensor batch = all_u8 || dev != torch::kCPU ? torch::stack(items) : reused_batch(items);
  if (dev != torch::kCPU) batch = batch.pin_memory().to(dev, /*non_blocking=*/true);
  return all_u8 ? normalize(batch, dev) : batch;
}

}  // namespace servelab::runtime
