// Mlp: plain C++ forward pass and its JSON form.
#include "learn/mlp.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace servelab::learn {

namespace {

void check_layer(const DenseLayer& l, size_t index) {
  const std::string where = "layer " + std::to_string(index) + ": ";
  if (l.inputs == 0 || l.outputs == 0 || l.inputs > Mlp::kMaxUnits || l.outputs > Mlp::kMaxUnits)
    throw std::invalid_argument(where + "sizes must be 1.." + std::to_string(Mlp::kMaxUnits));
  if (l.weight.size() != l.inputs * l.outputs || l.bias.size() != l.outputs)
    throw std::invalid_argument(where + "weight must hold outputs x inputs numbers, bias outputs");
  auto finite = [](float v) { return std::isfinite(v); };
  if (!std::all_of(l.weight.begin(), l.weight.end(), finite) ||
      !std::all_of(l.bias.begin(), l.bias.end(), finite))
    throw std::invalid_argument(where + "non-finite weight");
}

}  // namespace

Mlp::Mlp(std::vector<DenseLayer> layers) : layers_(std::move(layers)) {
  if (layers_.empty()) throw std::invalid_argument("an MLP needs at least one layer");
  for (size_t i = 0; i < layers_.size(); ++i) {
    check_layer(layers_[i], i);
    if (i > 0 && layers_[i].inputs != layers_[i - 1].outputs)
      throw std::invalid_argument("layer " + std::to_string(i) + " takes " +
                                  std::to_string(layers_[i].inputs) + " inputs, the layer " +
                                  "before gives " + std::to_string(layers_[i - 1].outputs));
  }
}

void Mlp::forward(std::span<const float> in, std::span<float> out) const {
  if (in.size() != inputs() || out.size() != outputs())
    throw std::invalid_argument("Mlp::forward: wrong input or output size");
  a_.assign(in.begin(), in.end());
  for (size_t k = 0; k < layers_.size(); ++k) {
    const DenseLayer& l = layers_[k];
    b_.resize(l.outputs);
    for (size_t o = 0; o < l.outputs; ++o) {
      const float* w = &l.weight[o * l.inputs];
      float sum = l.bias[o];
      for (size_t i = 0; i < l.inputs; ++i) sum += w[i] * a_[i];
      b_[o] = k + 1 < layers_.size() ? std::tanh(sum) : sum;
    }
    a_.swap(b_);
  }
  std::copy(a_.begin(), a_.end(), out.begin());
}

std::string Mlp::to_json() const {
  nlohmann::json layers = nlohmann::json::array();
  for (const DenseLayer& l : layers_)
    layers.push_back({{"inputs", l.inputs}, {"outputs", l.outputs}, {"weight", l.weight},
                      {"bias", l.bias}});
  nlohmann::json doc{{"format", "servelab-mlp"}, {"version", 1}, {"activation", "tanh"},
                     {"layers", layers}};
  return doc.dump();
}

Mlp Mlp::from_json(const std::string& text) {
  nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) throw std::invalid_argument("not JSON");
  if (!doc.is_object() || doc.value("format", "") != "servelab-mlp" || doc.value("version", 0) != 1)
    throw std::invalid_argument("not a servelab-mlp version 1 document");
  if (doc.value("activation", "") != "tanh")
    throw std::invalid_argument("unsupported activation (tanh is the one known)");
  const nlohmann::json& layers = doc["layers"];
  if (!layers.is_array() || layers.empty() || layers.size() > 64)
    throw std::invalid_argument("'layers' must list 1..64 layers");
  std::vector<DenseLayer> out;
  try {
    for (const auto& l : layers) {
      DenseLayer d;
      d.inputs = l.at("inputs").get<size_t>();
      d.outputs = l.at("outputs").get<size_t>();
      if (d.inputs > kMaxUnits || d.outputs > kMaxUnits)
        throw std::invalid_argument("layer sizes must be at most " + std::to_string(kMaxUnits));
      d.weight = l.at("weight").get<std::vector<float>>();
      d.bias = l.at("bias").get<std::vector<float>>();
      out.push_back(std::move(d));
    }
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(std::string("malformed layer: ") + e.what());
  }
  return Mlp(std::move(out));
}

Mlp load_mlp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::invalid_argument(path + ": cannot open");
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  constexpr std::streamoff kMaxBytes = 256 << 20;
  if (size < 0 || size > kMaxBytes) throw std::invalid_argument(path + ": larger than 256 MiB");
  in.seekg(0);
  std::string text(size_t(size), '\0');
  in.read(text.data(), size);
  try {
    return Mlp::from_json(text);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(path + ": " + e.what());
  }
}

void save_mlp(const Mlp& mlp, const std::string& path) {
  if (mlp.layers().empty()) throw std::invalid_argument(path + ": refusing to save an empty network");
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << mlp.to_json() << "\n";
  if (!out.flush()) throw std::runtime_error(path + ": cannot write");
}

size_t argmax(std::span<const float> values) {
  return size_t(std::max_element(values.begin(), values.end()) - values.begin());
}

}  // namespace servelab::learn
