#include "engine/runtime/torch_check.h"

#include "engine/runtime/allocator.h"
#include "engine/runtime/workspace_probe.h"

namespace servelab::runtime {

// The buffers of all but the last forward go back to the system; the last one's stay for the
// model's first batch to reuse, as every forward's do (allocator.h): a process keeps what
// its batches need, not a probe's.
CheckRecord check_forwards(torch::jit::Module& module, const ModelSpec& spec) {
  CheckRecord r;
  r.input = {spec.preprocess.input_height, spec.preprocess.input_width};
  for (size_t i = 0; i < kCheckBatches.size(); ++i) {
    const int64_t b = kCheckBatches[i];
    if (i > 0) give_back_freed_memory();
    try {
      WorkspaceProbe probe;
      c10::InferenceMode guard;
      at::Tensor x = torch::rand({b, 3, r.input.height, r.input.width});
      auto out = module.forward({x});
      if (!out.isTensor())
        throw ModelError(400, "model '" + spec.name + "' does not return a tensor");
      at::Tensor t = out.toTensor();
      if (t.dim() != 2 || t.size(0) != b || t.size(1) < 1 || !t.is_floating_point())
        throw ModelError(400, "model '" + spec.name + "' must return float logits of shape "
                                  "[batch, classes]; got " + shape_string(t));
      r.classes = static_cast<uint32_t>(t.size(1));
      r.peak_bytes[i] = probe.peak_bytes();
    } catch (const ModelError&) {
      throw;
    } catch (const std::exception& e) {
      throw ModelError(400, "model '" + spec.name + "' fails its check forward pass on a " +
                                std::to_string(b) + "x3x" + std::to_string(r.input.height) +
                                "x" + std::to_string(r.input.width) +
                                " batch: " + first_line(e.what()));
    }
  }
  return r;
}

std::string shape_string(const at::Tensor& t) {
  std::string s = "[";
  for (int64_t i = 0; i < t.dim(); ++i) s += (i ? ", " : "") + std::to_string(t.size(i));
  return s + "]";
}

std::string first_line(const std::string& s) {
  std::string best = s.substr(0, s.find('\n'));
  size_t start = 0;
  while (start < s.size()) {
    size_t end = s.find('\n', start);
    if (end == std::string::npos) end = s.size();
    std::string line = s.substr(start, end - start);
    if (line.find("Error: ") != std::string::npos) best = line;
    start = end + 1;
  }
  size_t b = best.find_first_not_of(' ');
  return b == std::string::npos ? best : best.substr(b);
}

}  // namespace servelab::runtime
