// The tiny variant family (`scripts/make-models --tiny`: one backbone, a head each) for the
// weight store's architecture tests: a variant's file, the variant loaded whole, and its logits on one
// fixed 32x32 input. Includes LibTorch and not Catch2: include it before Catch2, whose CHECK must win.
#pragma once

#include <torch/script.h>

#include <string>

namespace servelab::runtime::test {

inline std::string variant(int i) {
  return std::string(SERVELAB_SOURCE_DIR) + "/models/tiny_variant_" + std::to_string(i) + ".pt";
}

inline torch::jit::Module plain(int i) {
  torch::jit::Module m = torch::jit::load(variant(i), torch::kCPU);
  m.eval();
  return m;
}

inline at::Tensor logits(torch::jit::Module& m) {
  c10::InferenceMode guard;
  return m.forward({torch::linspace(-1, 1, 3 * 32 * 32).view({1, 3, 32, 32})}).toTensor();
}

}  // namespace servelab::runtime::test
