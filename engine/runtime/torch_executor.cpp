// LibTorch executor: TorchScript modules loaded with torch::jit::load, batched forward passes
// under c10::InferenceMode, tiers disk -> host -> device.
//
// Contexts (Rafiqi 4.0.3): one shared module per tier serves up to `contexts` concurrent
// batches. TorchScript modules may run forward from several threads at once (the interpreter
// keeps per-call state; parameters are only read), so k replicas would only multiply weight
// memory; the controller bounds concurrent batches per model to ModelInfo::contexts, and
// each running batch needs its own activations, which is what the workspace accounts.
//
// Device tier (CUDA): a model's host copy is packed into one pinned buffer, so Host ->
// Device is one DMA of the whole model into one device buffer whose views are the device
// module's tensors (torch_tiers.h); the load waits for the copy, so a load is done when its
// bytes are on the device, its measured time is the transfer's, and loads never overlap (one
// loader thread). A batch is gathered into the worker's pinned staging buffer and copied in
// one DMA; uint8 crops are normalized on the device. Checked on a GPU by scripts/gpu-check
// (tests/gpu).
#include <torch/cuda.h>
#include <torch/version.h>
#include <ATen/Parallel.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <mutex>
#include <optional>
#include <random>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

#include "engine/runtime/allocator.h"
#include "engine/runtime/executor.h"
#include "engine/runtime/graph_optimizer.h"
#include "engine/runtime/torch_batch.h"
#include "engine/runtime/torch_check.h"
#include "engine/runtime/torch_tiers.h"
#include "engine/runtime/weight_store_imports.h"
#include "engine/runtime/workspace_probe.h"
#ifndef SERVELAB_CORE_ONLY
#include "engine/runtime/torch_weight_store.h"
#endif

namespace servelab::runtime {
namespace {

struct TorchModel {
  std::string file;
  Preprocess pp;
  ModulePtr tiers[kTierCount];  // [Host], [Device]; [Disk] unused (the file is the copy)
  DeviceNormalization norm;  // CUDA: set at add()
};

class TorchExecutor final : public Executor {
 public:
  TorchExecutor(const std::string& device, int intra_op_threads, const WeightStoreOptions& weights) {
    bool cuda = torch::cuda::is_available();
    if (device == "cuda" && !cuda)
      throw std::runtime_error("device 'cuda' requested but LibTorch sees no CUDA device");
    if (device != "auto" && device != "cpu" && device != "cuda")
      throw std::runtime_error("unknown device '" + device + "' (expected auto, cpu or cuda)");
    use_cuda_ = cuda && device != "cpu";
    if (intra_op_threads > 0) at::set_num_threads(intra_op_threads);  // process-wide
    keep_freed_memory();  // one allocator regime for the profiler and the server
    if (!weights.dir.empty()) open_weight_store(weights);
  }

  // No TorchScript graph optimization: the profiling executor makes the first two runs of
  // every freshly loaded module slow (profile, then optimize), so each cache miss would pay
  // that extra compute, while warm runs on the CPU gain nothing measurable from it. The
  // switch is thread-local in LibTorch, so it is set on every worker thread, not only on the
  // thread that builds the engine.
  // CUDA: each worker issues its batches on a stream of its own from LibTorch's pool (the
  // switch is thread-local too). On the one default stream, a worker's wait for its logits
  // (the device-to-host copy) also waited for the kernels another worker had queued before
  // that copy. Weights need no ordering against these streams: a load synchronizes the device.
  // Threads: OpenMP keeps its thread count per thread, and a thread LibTorch did not start
  // reads OpenMP's default (every core) until LibTorch's own parallel code first runs on it;
  // oneDNN's convolutions and OpenBLAS's matrix products ask OpenMP directly, so without this
  // each worker would run them on a team of every core, beside the other workers.
  void prepare_thread() override {
    torch::jit::setGraphExecutorOptimize(false);
    at::init_num_threads();
    if (!use_cuda_) return;
    const auto* cuda = c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA);
    cuda->exchangeStream(cuda->getStreamFromGlobalPool(cuda->getDevice()));
  }

  ModelMeasure add(ModelId id, const ModelSpec& spec, uint32_t max_batch,
                   uint32_t contexts) override {
    OptimizerOff no_opt;  // the check forward runs on the caller's thread, as workers would
    at::init_num_threads();
    auto model = std::make_shared<TorchModel>();
    model->file = spec.file;
    model->pp = spec.preprocess;
    ModulePtr module;
    try {
      module = weights_ ? weights_add(id, spec) : load_from_disk(spec.file);
    } catch (const std::exception& e) {
      throw ModelError(400, "cannot load '" + spec.file + "' as a TorchScript module: " +
                                first_line(e.what()));
    }
    // Registration failing past this point forgets the model's blobs again.
    struct Forget {
      TorchExecutor* self;
      ModelId id;
      bool armed = true;
      ~Forget() { if (armed) self->weights_remove(id); }
    } forget{this, id};
    // What a load from the file read and built for a while goes back to the system (the
    // weight store does so when it reads the file); a load from the store's skeleton builds
    // little, and the freed buffers kept for batches (a replica's warm-up's) stay.
    if (!weights_) give_back_freed_memory();
    ModelMeasure m;
    m.param_bytes = tensor_bytes(*module);
    // The check, or the store's record of the same file's check at this input size.
    const WarmInput input{spec.preprocess.input_height, spec.preprocess.input_width};
    std::optional<CheckRecord> check = recorded_check(id, input);
    m.check_recorded = check.has_value();
    if (!check) {
      check = check_forwards(*module, spec);
      record_check(id, *check);
    }
    m.classes = check->classes;
    if (!spec.labels.empty() && spec.labels.size() != m.classes)
      throw ModelError(400, "model '" + spec.name + "' outputs " + std::to_string(m.classes) +
                                " classes but " + std::to_string(spec.labels.size()) +
                                " labels were given");
    // Workspace: the peaks at batch 1 and 2, extrapolated linearly to max_batch.
    static_assert(kCheckBatches[0] == 2 && kCheckBatches[1] == 1);
    const uint64_t peak1 = check->peak_bytes[1], peak2 = check->peak_bytes[0];
    uint64_t per_sample = peak2 > peak1 ? peak2 - peak1 : 0;
    uint64_t at_max = peak1 + per_sample * (max_batch > 1 ? max_batch - 1 : 0);
    m.workspace_bytes = at_max * std::max<uint32_t>(contexts, 1);
    model->tiers[static_cast<int>(Tier::Host)] = std::move(module);
    if (use_cuda_) model->norm = device_normalization(model->pp);
    std::lock_guard lock(mu_);
    models_[id] = std::move(model);
    forget.armed = false;
    return m;
  }

  void remove(ModelId id) override {
    {
      std::lock_guard lock(mu_);
      models_.erase(id);
    }
    weights_remove(id);
  }

  LoadParts load(ModelId id, Tier from, Tier to) override {
    std::shared_ptr<TorchModel> model = find(id);
    if (!model) throw std::runtime_error("model was removed");
    LoadParts parts;
    ModulePtr copy;
    if (to == Tier::Host) {
      copy = reload(id, *model, parts);  // a real read (and deserialization without a store)
    } else if (to == Tier::Device) {
      if (!use_cuda_) throw std::runtime_error("no CUDA device for the device tier");
      ModulePtr host = module_in(*model, Tier::Host);
      if (!host || from == Tier::Disk) host = reload(id, *model, parts);
      const auto start = std::chrono::steady_clock::now();
      copy = copy_to_device(*host, torch::Device(torch::kCUDA));
      torch::cuda::synchronize();  // done when the bytes are there (see the file comment)
      parts.copy_s = seconds_since(start);
    } else {
      throw std::runtime_error("cannot load into the disk tier");
    }
    std::lock_guard lock(mu_);
    model->tiers[static_cast<int>(to)] = std::move(copy);
    return parts;
  }

  void evict(ModelId id, Tier tier) override {
    std::shared_ptr<TorchModel> model = find(id);
    if (!model || tier == Tier::Disk) return;
    ModulePtr dropped;  // freed outside the lock (or by the last running batch)
    std::lock_guard lock(mu_);
    dropped = std::move(model->tiers[static_cast<int>(tier)]);
  }

  void run(ModelId id, Tier exec, const std::vector<const Input*>& inputs,
           std::vector<std::vector<float>>& outputs) override {
    std::shared_ptr<TorchModel> model = find(id);
    if (!model) throw std::runtime_error("model was removed");
    ModulePtr module = module_in(*model, exec);
    if (!module) throw std::runtime_error(std::string("model is not resident in ") +
                                          tier_name(exec));
    forward(*model, *module, exec == Tier::Device, inputs, outputs);
  }

  // Private weights: the file read and deserialized again (as a cold start without a weight
  // store does), then on CUDA copied to the device, for one batch.
  std::unique_ptr<PrivateCopy> load_private(ModelId id) override {
    std::shared_ptr<TorchModel> model = find(id);
    if (!model) throw std::runtime_error("model was removed");
    auto copy = std::make_unique<TorchCopy>();
    copy->model = model;
    copy->module = load_from_disk(model->file, &copy->parts);
    if (use_cuda_) {
      const auto start = std::chrono::steady_clock::now();
      copy->module = copy_to_device(*copy->module, torch::Device(torch::kCUDA));
      torch::cuda::synchronize();
      copy->parts.copy_s = seconds_since(start);
    }
    return copy;
  }

  void run_private(ModelId, const PrivateCopy& copy, const std::vector<const Input*>& inputs,
                   std::vector<std::vector<float>>& outputs) override {
    const auto& own = static_cast<const TorchCopy&>(copy);
    forward(*own.model, *own.module, use_cuda_, inputs, outputs);
  }

  bool normalizes_on_device() const override { return use_cuda_; }
  bool accepts_empty_input() const override { return false; }
  Tier exec_tier() const override { return use_cuda_ ? Tier::Device : Tier::Host; }

 private:
  struct TorchCopy final : PrivateCopy {
    std::shared_ptr<TorchModel> model;  // preprocessing and device normalization
    ModulePtr module;
  };

  // One batched forward pass of `module` (a copy of `model`) into `outputs`' logits rows.
  static void forward(const TorchModel& model, torch::jit::Module& module, bool on_device,
                      const std::vector<const Input*>& inputs,
                      std::vector<std::vector<float>>& outputs) {
    c10::InferenceMode guard;
    at::Tensor batch = make_batch(model.pp, model.norm, on_device, inputs);
    at::Tensor out;
    try {
      out = module.forward({batch}).toTensor();
    } catch (const std::exception& e) {
      throw std::runtime_error(first_line(e.what()));
    }
    if (out.dim() != 2 || out.size(0) != static_cast<int64_t>(inputs.size()))
      throw std::runtime_error("model returned " + shape_string(out) + " for a batch of " +
                               std::to_string(inputs.size()));
    at::Tensor p = out.to(torch::kCPU, torch::kFloat).contiguous();
    const int64_t classes = p.size(1);
    const float* data = p.data_ptr<float>();
    outputs.resize(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i)
      outputs[i].assign(data + i * classes, data + (i + 1) * classes);
  }

#ifndef SERVELAB_CORE_ONLY
  void open_weight_store(const WeightStoreOptions& w) {
    std::string holder = w.holder;
    if (holder.empty()) {
      std::random_device rd;
      holder = "engine-" + std::to_string(rd()) + std::to_string(rd());
    }
    weights_ = std::make_unique<TorchWeightStore>(w.dir, holder);
  }
  ModulePtr weights_add(ModelId id, const ModelSpec& spec) {
    return weights_->add(id, spec.name, spec.file, spec.digest,
                         {spec.preprocess.input_height, spec.preprocess.input_width});
  }
  void weights_remove(ModelId id) {
    if (weights_) weights_->remove(id);
  }
  std::optional<CheckRecord> recorded_check(ModelId id, const WarmInput& input) const {
    return weights_ ? weights_->recorded_check(id, input) : std::nullopt;
  }
  void record_check(ModelId id, const CheckRecord& check) {
    if (weights_) weights_->record_check(id, check);
  }
  ModulePtr reload(ModelId id, const TorchModel& model, LoadParts& parts) const {
    return weights_ ? weights_->reload(id, &parts) : load_from_disk(model.file, &parts);
  }

 public:
  store::WeightBytes weight_bytes(ModelId id) const override {
    return weights_ ? weights_->bytes_of(id) : store::WeightBytes{};
  }
  store::Tidied tidy_weight_store() override {
    return weights_ ? weights_->tidy() : store::Tidied{};
  }
  std::vector<WeightPart> weight_parts(ModelId id) const override {
    return weights_ ? weights_->parts_of(id) : std::vector<WeightPart>{};
  }

 private:
  std::unique_ptr<TorchWeightStore> weights_;  // null: no weight store
#else  // the GPU checks' build has no weight store (engine/store needs libcrypto, libxxhash)
  void open_weight_store(const WeightStoreOptions&) {
    throw std::runtime_error("this build of the engine has no weight store");
  }
  ModulePtr weights_add(ModelId, const ModelSpec&) { return nullptr; }
  void weights_remove(ModelId) {}
  std::optional<CheckRecord> recorded_check(ModelId, const WarmInput&) const {
    return std::nullopt;
  }
  void record_check(ModelId, const CheckRecord&) {}
  ModulePtr reload(ModelId, const TorchModel& model, LoadParts& parts) const {
    return load_from_disk(model.file, &parts);
  }
  std::nullptr_t weights_ = nullptr;
#endif

  // The file is read through once (into the page cache, a chunk at a time, so that memory
  // does not grow with it), then deserialized from there, so that `parts` can tell the two
  // apart.
  ModulePtr load_from_disk(const std::string& file, LoadParts* parts = nullptr) const {
    auto start = std::chrono::steady_clock::now();
    std::ifstream in(file, std::ios::binary);
    if (!in) throw std::runtime_error("cannot read model file '" + file + "'");
    std::vector<char> chunk(1 << 20);
    while (in.read(chunk.data(), static_cast<std::streamsize>(chunk.size())) || in.gcount() > 0) {
    }
    const double read_s = seconds_since(start);
    start = std::chrono::steady_clock::now();
    auto m = std::make_shared<torch::jit::Module>(torch::jit::load(file, torch::kCPU));
    m->eval();
    if (use_cuda_) m = packed(*m, /*pinned=*/true);  // one pinned buffer: a load is one DMA
    if (parts) {
      parts->read_s += read_s;
      parts->deserialize_s += seconds_since(start);
    }
    return m;
  }
  static double seconds_since(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  }

  std::shared_ptr<TorchModel> find(ModelId id) const {
    std::lock_guard lock(mu_);
    auto it = models_.find(id);
    return it == models_.end() ? nullptr : it->second;
  }
  ModulePtr module_in(const TorchModel& model, Tier tier) const {
    std::lock_guard lock(mu_);
    return model.tiers[static_cast<int>(tier)];
  }

  bool use_cuda_ = false;
  mutable std::mutex mu_;  // guards models_ and every TorchModel::tiers
  std::unordered_map<ModelId, std::shared_ptr<TorchModel>> models_;
};

}  // namespace

std::unique_ptr<Executor> make_torch_executor(const std::string& device, int intra_op_threads,
                                              WeightStoreOptions weights) {
  return std::make_unique<TorchExecutor>(device, intra_op_threads, weights);
}

bool torch_cuda_available() { return torch::cuda::is_available(); }

}  // namespace servelab::runtime
