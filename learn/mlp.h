// A small multilayer perceptron evaluated in plain C++: the deployed form of a policy network
// trained by `servelab train` (learn/train/, LibTorch). Dense layers, tanh between them, the
// last layer linear. Saved and loaded as JSON ({"format": "servelab-mlp", "layers": [...]}).
// Value type. forward() allocates nothing after the first call and keeps scratch inside:
// one thread at a time (each policy instance owns its copy).
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

namespace servelab::learn {

struct DenseLayer {
  size_t inputs = 0, outputs = 0;
  std::vector<float> weight;  // outputs x inputs, row-major (LibTorch's nn::Linear layout)
  std::vector<float> bias;    // outputs
};

class Mlp {
 public:
  Mlp() = default;
  // Layers must chain (each one's inputs = the previous one's outputs); throws
  // std::invalid_argument otherwise.
  explicit Mlp(std::vector<DenseLayer> layers);

  size_t inputs() const { return layers_.empty() ? 0 : layers_.front().inputs; }
  size_t outputs() const { return layers_.empty() ? 0 : layers_.back().outputs; }
  const std::vector<DenseLayer>& layers() const { return layers_; }

  // out = f(in); in.size() == inputs(), out.size() == outputs().
  void forward(std::span<const float> in, std::span<float> out) const;

  // JSON text; load() throws std::invalid_argument with the reason for a malformed document
  // (bad format tag, layers that do not chain, sizes over kMaxUnits, non-finite numbers).
  std::string to_json() const;
  static Mlp from_json(const std::string& text);
  static constexpr size_t kMaxUnits = 4096;  // per layer, inputs and outputs

 private:
  std::vector<DenseLayer> layers_;
  mutable std::vector<float> a_, b_;  // scratch activations (forward is not re-entrant)
};

// Reads and writes an Mlp file; errors name the file.
Mlp load_mlp(const std::string& path);
void save_mlp(const Mlp& mlp, const std::string& path);

// Index of the largest value (the first on ties).
size_t argmax(std::span<const float> values);

}  // namespace servelab::learn
