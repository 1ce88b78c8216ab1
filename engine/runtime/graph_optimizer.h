// TorchScript's graph optimization switch (thread-local in LibTorch), turned off for a scope:
// the engine runs every forward pass without it (torch_executor.cpp says why), and so does
// anything that builds execution plans for the engine's passes ahead of them
// (weight_store_imports.cpp). Includes LibTorch.
#pragma once

#include <torch/script.h>
#if __has_include(<torch/csrc/jit/python/update_graph_executor_opt.h>)
#include <torch/csrc/jit/python/update_graph_executor_opt.h>
#else  // LibTorch installs that leave out the jit/python headers: the functions are exported
namespace torch::jit {
TORCH_API void setGraphExecutorOptimize(bool o);
TORCH_API bool getGraphExecutorOptimize();
}  // namespace torch::jit
#endif

namespace servelab::runtime {

// Turns TorchScript graph optimization off on this thread for its lifetime.
struct OptimizerOff {
  bool was = torch::jit::getGraphExecutorOptimize();
  OptimizerOff() { torch::jit::setGraphExecutorOptimize(false); }
  ~OptimizerOff() { torch::jit::setGraphExecutorOptimize(was); }
  OptimizerOff(const OptimizerOff&) = delete;
  OptimizerOff& operator=(const OptimizerOff&) = delete;
};

}  // namespace servelab::runtime
