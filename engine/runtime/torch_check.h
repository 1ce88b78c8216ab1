// A registration's check of a TorchScript module (Rafiqi 3.1: a model is loaded and run
// before its registration is answered), and the messages LibTorch's errors become.
// Includes LibTorch (torch_executor.cpp and torch_check.cpp only).
// Thread-safety: free functions; the check runs on the caller's thread.
#pragma once

#include <torch/script.h>

#include <string>

#include "engine/runtime/engine.h"
#include "engine/runtime/weight_store_imports.h"

namespace servelab::runtime {

// Forwards of `module` at the check's batches (kCheckBatches) of a random input of the
// spec's size, which must give float logits [batch, classes]; returns their width and the
// peak bytes each allocated through the CPU allocator on this thread (the workspace).
// Throws ModelError(400) naming the model otherwise.
CheckRecord check_forwards(torch::jit::Module& module, const ModelSpec& spec);

// "[2, 1000]"
std::string shape_string(const at::Tensor& t);
// LibTorch messages carry a TorchScript traceback; keep the line that names the error
// ("RuntimeError: ...") when there is one, else the first line.
std::string first_line(const std::string& s);

}  // namespace servelab::runtime
