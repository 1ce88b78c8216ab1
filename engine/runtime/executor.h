// Executors carry out what the controller decides: loads and evictions between tiers (on the
// loader thread) and batched forward passes (on worker threads). Two implementations: LibTorch
// (real TorchScript modules, torch_executor.cpp) and profiled (sleeps the time a cost profile
// gives, profiled_executor.cpp). This header is free of LibTorch and OpenCV.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/control/cost_profile.h"
#include "engine/control/types.h"
#include "engine/runtime/engine.h"
#include "engine/runtime/load_parts.h"
#include "engine/store/weight_bytes.h"

namespace servelab::runtime {

// One request's input. Produced by preprocessing on the caller's thread (HTTP handler or
// submit_raw), owned by the engine while the request is pending, read by one worker.
struct Input {
  std::vector<float> chw;    // normalized float, C x H x W (CPU path and submit_raw)
  std::vector<uint8_t> hwc;  // RGB uint8, H x W x C, to be normalized on the device (CUDA)
  int channels = 3, height = 0, width = 0;
  bool empty() const { return chw.empty() && hwc.empty(); }
};

// What registration measured. size = param_bytes + workspace_bytes is what the cache accounts.
struct ModelMeasure {
  uint64_t param_bytes = 0;      // parameters + buffers (each storage counted once)
  uint64_t workspace_bytes = 0;  // activation workspace at max batch, times contexts
  uint32_t classes = 0;          // width of the output (0 when unknown, e.g. profiled)
  // No check forward ran: a weight store's record of the same file's check at the same input
  // size (an earlier registration, by any process on the store) gave classes and workspace.
  bool check_recorded = false;
};

// A copy of one model that belongs to one batch (EngineOptions::private_weights): loaded
// from disk into the executing tier for that batch alone, freed when the batch drops it.
struct PrivateCopy {
  virtual ~PrivateCopy() = default;
  LoadParts parts;  // where its load's time went
};

// Thread-safety: add/remove may be called from any thread (never twice concurrently for one
// id); load/evict/load_private only from the loader thread; run/run_private from worker
// threads, concurrently.
class Executor {
 public:
  virtual ~Executor() = default;

  // Registration: loads `spec.file` from disk, checks a forward pass on dummy batches,
  // measures the model, and leaves it resident in Host. `max_batch` and `contexts` scale the
  // workspace. Throws ModelError(400) with a user-facing message; on failure nothing is kept.
  virtual ModelMeasure add(ModelId id, const ModelSpec& spec, uint32_t max_batch,
                           uint32_t contexts) = 0;
  // Forgets a model; batches already running keep their module alive until they finish.
  virtual void remove(ModelId id) = 0;

  // Moves a copy of the model from `from` to `to` (a real disk read for Disk -> Host) and
  // says where the time went (all zero where an executor does not measure it). Throws
  // std::exception with a message on failure (the controller then fails the waiters).
  virtual LoadParts load(ModelId id, Tier from, Tier to) = 0;
  // Frees the model's copy in `tier`. Unknown ids and non-resident tiers are ignored.
  virtual void evict(ModelId id, Tier tier) = 0;

  // One batched forward pass from tier `exec`. On return outputs[i] holds the model's output
  // row (logits) for inputs[i] (empty vectors when the executor computes no outputs); the
  // engine turns it into probabilities where a request asks for classes.
  // Throws std::exception on failure (the whole batch fails).
  virtual void run(ModelId id, Tier exec, const std::vector<const Input*>& inputs,
                   std::vector<std::vector<float>>& outputs) = 0;

  // Private weights (TrIMS's baseline, no model shared between requests): a copy of model
  // `id` of its own, read and built from its file as a cold start does, in the executing
  // tier; and one batched forward pass with it (outputs as run()). Throws on failure.
  virtual std::unique_ptr<PrivateCopy> load_private(ModelId id) = 0;
  virtual void run_private(ModelId id, const PrivateCopy& copy,
                           const std::vector<const Input*>& inputs,
                           std::vector<std::vector<float>>& outputs) = 0;

  // With a weight store: the bytes of model `id`'s shared weights (zero without one).
  virtual store::WeightBytes weight_bytes(ModelId id) const { return {}; }
  // With a weight store: model `id`'s blobs as parts the Host tier holds once for every model
  // that has them (ModelInfo::host_parts); empty without one.
  virtual std::vector<WeightPart> weight_parts(ModelId id) const { return {}; }
  // With a weight store, after a restart's models are added again: removes what a crash left
  // in the store (store::Tidied); nothing without one.
  virtual store::Tidied tidy_weight_store() { return {}; }

  // Called once on each worker thread before its first run(): per-thread library settings.
  virtual void prepare_thread() {}

  // Whether preprocessing should hand over uint8 crops for on-device normalization.
  virtual bool normalizes_on_device() const = 0;
  // True when inputs are ignored (profiled): submit_raw may then pass an empty input.
  virtual bool accepts_empty_input() const = 0;
  // The tier batches execute from: Device when the executor drives a CUDA device, else Host.
  virtual Tier exec_tier() const = 0;
};

// Where the torch executor keeps shared weights (EngineOptions::weight_store): empty dir, none.
struct WeightStoreOptions {
  std::string dir;
  std::string holder;  // this process's name in the store (empty: a fresh one)
};

// LibTorch executor. `device`: auto | cpu | cuda ("cuda" throws std::runtime_error when
// torch::cuda::is_available() is false). Sets LibTorch's process-wide intra-op thread count
// to `intra_op_threads` (at::set_num_threads is global: the last engine created wins).
// With `weights.dir`, host copies come from the weight store (torch_weight_store.h).
std::unique_ptr<Executor> make_torch_executor(const std::string& device, int intra_op_threads,
                                              WeightStoreOptions weights = {});

// Profiled executor: run() sleeps profile.batch_latency(b) (or a noisy draw), load() sleeps
// load_seconds(from, to); sizes come from the profile. Models are looked up by ModelSpec::name;
// add() throws ModelError(400) for a name the profile lacks.
std::unique_ptr<Executor> make_profiled_executor(CostProfile profile, CostNoise noise,
                                                 uint64_t seed);

// Whether LibTorch sees a CUDA device (false on CPU-only LibTorch builds).
bool torch_cuda_available();

}  // namespace servelab::runtime
