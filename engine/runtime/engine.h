// The engine: the real body of the control plane. The Controller runs under one lock, on
// the thread that brings it an event (engine_impl.h), and a control thread runs its timers;
// a worker pool executes batches (LibTorch or profiled executor); a loader thread carries out
// loads and evictions between tiers. This facade is what the HTTP server and the experiment
// runner use; it hides LibTorch and OpenCV (they stay in a few .cpp files).
// Thread-safety: every public method may be called from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "engine/control/cache_trace.h"
#include "engine/control/controller.h"
#include "engine/control/cost_profile.h"
#include "engine/runtime/load_parts.h"
#include "engine/control/types.h"
#include "engine/store/weight_bytes.h"

namespace servelab::runtime {

// Thrown for a model that cannot be registered (corrupt file, not TorchScript, fails its
// check forward pass, duplicate or invalid name). `http_status` is the status the server
// should answer with (400 or 409); message is user-facing.
struct ModelError : std::runtime_error {
  ModelError(int http_status, const std::string& msg)
      : std::runtime_error(msg), http_status(http_status) {}
  int http_status;
};

// Image preprocessing of a model (OpenCV): decode, resize shorter side to `resize`,
// center-crop to input_height x input_width, scale to [0,1], (x - mean) / std, CHW float.
struct Preprocess {
  int input_width = 224;
  int input_height = 224;
  int resize = 256;  // shorter side before the crop; <= 0: resize straight to the input size
  float mean[3] = {0.485f, 0.456f, 0.406f};
  float std[3] = {0.229f, 0.224f, 0.225f};
};

struct ModelSpec {
  std::string name;
  std::string file;                 // TorchScript file (already in the model store)
  // SHA-256 of `file` where the caller knows it (the registry's checksum): with a weight
  // store, it names the model's skeleton. Empty: hashed when needed.
  std::string digest;
  std::vector<std::string> labels;  // class labels; may be empty (labels become indices)
  Preprocess preprocess;
  uint32_t contexts = 0;            // 0: the engine default
  // Latency objective in seconds: each request's deadline is its arrival + slo (a request's
  // own SLO wins; none: the engine default, EngineOptions::slo).
  std::optional<double> slo;
};

// Per-request options of classify / submit_raw.
struct RequestOptions {
  std::optional<double> slo;  // seconds (HTTP: X-SLO-Ms); overrides the model's
  // A request that waited elsewhere before it reached the engine (a model group's queue,
  // engine/server/group_dispatch.h): its arrival in engine time (Engine::now()) and its
  // deadline, which then override now and now + slo.
  std::optional<Time> arrival;
  std::optional<Time> deadline;
  // Called once when the request leaves its queue in a batch handed to a worker (a tied copy's
  // server tells the cluster's front end so; engine/server/request_ids.h), on the engine
  // thread that dispatches, under the control lock: it must return quickly and must not call
  // the engine. Empty: nothing is called.
  std::function<void()> on_dispatch;
};

struct Input;  // a preprocessed image (executor.h)

// Everything known about a registered model, for GET /models and the registry.
struct ModelStatus {
  std::string name;
  std::string file;
  uint64_t param_bytes = 0;       // parameters + buffers
  // With a weight store (EngineOptions::weight_store): the bytes of the model's blobs, those
  // no other model uses (what removing it frees) and those shared. All zero without one.
  store::WeightBytes weights;
  uint64_t workspace_bytes = 0;   // activation workspace at max batch, where measured
  uint64_t size_bytes = 0;        // what the cache accounts: param + workspace
  bool check_recorded = false;    // its registration's check came from the store (executor.h)
  uint32_t contexts = 1;
  bool resident_host = false;
  bool resident_device = false;
  // Bytes evicting it from that tier would free now (Controller's ModelState::frees_bytes).
  uint64_t host_frees_bytes = 0;
  uint64_t device_frees_bytes = 0;
  bool loading = false;
  uint32_t queued = 0;
  uint32_t ref_count = 0;
  ModelCounters counters;
  Preprocess preprocess;
  std::vector<std::string> labels;
  std::optional<double> slo;      // seconds, as registered
  // The cost profile's mean batch costs of the model's file (EngineOptions::cost_profile),
  // by batch size; empty without an entry. What SLO-aware policies and dispatchers plan with.
  std::vector<BatchSeconds> batch_seconds;
};

struct ClassifyResult {
  RequestStatus status = RequestStatus::Ok;
  std::string error;                               // non-empty when status != Ok
  std::vector<std::pair<std::string, float>> top;  // label, probability (softmax), best first
  std::vector<float> output;                       // infer(): the model's output row (logits)
  double queue_s = 0, load_s = 0, compute_s = 0;   // time split of this request
  LoadParts load_parts;  // of load_s, the phases of the loads its batch waited for
  uint32_t batch_size = 0;
  std::optional<bool> slo_met;  // with a deadline: answered Ok by it
};

// One load as the loader thread carried it out (EngineOptions::on_load).
struct LoadSpan {
  std::string model;
  Tier from = Tier::Disk, to = Tier::Host;
  Time start = 0, end = 0;  // engine time (Engine::now()) around the executor's load
  bool ok = true;
};

struct EngineOptions {
  ControllerConfig control;         // workers, quantum, policies, budgets, timeout, queue bound
  std::string executor = "torch";   // torch | profiled
  // The cost profile (a value: the caller reads its file, config/profile_yaml.h): the profiled
  // executor's costs; with the torch executor, only the batch-cost priors of SLO-aware
  // batching (an entry per model file stem). Null: none. Shared read-only by copies of these
  // options.
  std::shared_ptr<const CostProfile> cost_profile;
  std::string device = "auto";      // auto | cpu | cuda
  int intra_op_threads = 1;         // LibTorch intra-op threads per worker
  // Torch executor: a weight store directory (engine/store): models' large tensors live once
  // in it, mapped read-only and shared across models and processes. Empty: none (each model
  // is its TorchScript file, loaded whole). `weight_store_holder` names this engine's models
  // in the store, so that blobs are deleted only when no model of any process holds them:
  // stable across restarts (a server passes its model store's); empty: a fresh name.
  std::string weight_store;
  std::string weight_store_holder;
  // No model shared between requests (TrIMS's baseline, a FaaS cold start; config
  // `engine.weights: private`): each batch first loads a copy of its own from disk on the
  // loader thread (in line with the other loads: one disk), then runs with it; the answer's
  // load time is that load. The tiers must then be unlimited and there is no weight store.
  bool private_weights = false;
  uint32_t default_contexts = 1;    // Rafiqi's context pool size per model
  size_t max_image_bytes = 16 << 20;
  std::optional<double> slo;        // seconds: default SLO of models without one (engine.slo_ms)
  // Called on the loader thread after each load, for traces and checks (tests/gpu: loads
  // never overlap). Must not call back into the engine. Empty: nothing is called.
  std::function<void(const LoadSpan&)> on_load;
};

// Prometheus text exposition of the engine's metrics (GET /metrics).
class Engine {
 public:
  explicit Engine(EngineOptions options);  // starts the control, worker and loader threads
  ~Engine();                               // stops threads; pending requests fail
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Loads `spec.file`, checks it with a forward pass on a dummy batch, measures its size,
  // and adds it to the controller (resident in host after the check). Blocks until done.
  // Throws ModelError; on failure nothing is registered.
  ModelStatus register_model(const ModelSpec& spec);
  // Removes a model; its queued requests fail. Returns false if unknown.
  bool unregister_model(const std::string& name);
  std::optional<ModelStatus> model(const std::string& name) const;
  // With a weight store, once a restart's models are registered again: removes what a crash
  // left in the store (this engine's marks of models it no longer has, blobs and skeletons no
  // model of any process holds, half-written files).
  store::Tidied tidy_weight_store();
  std::vector<ModelStatus> models() const;

  // The executing tier's cache trace (engine/control/cache_trace.h), for the offline optimum
  // of what its eviction policy did: start_cache_trace() begins one (the models resident in
  // the tier now are its start; a trace already begun starts afresh); take_cache_trace()
  // ends it and returns it with each model's bytes in the tier, or nothing where none was
  // begun or the tier shares weight parts (a weight store on the host tier: what a model
  // takes there depends on the others it holds). A trace keeps a model id per batch: begin
  // one for a bounded run (real mode's measured run), not for a server's lifetime.
  void start_cache_trace();
  std::optional<CacheTrace> take_cache_trace();

  // Queues one classification. `done` is called exactly once, from an engine thread (never
  // inside this call for accepted requests), with the result. Errors are reported through
  // `done`'s status (Rejected: queue full -> 503; Timeout -> 504; Failed -> 500). Unknown
  // model, undecodable image or oversized body is reported synchronously by the
  // return value instead: 404 unknown model, 400 undecodable image, 413 body over
  // max_image_bytes; 0 when accepted. A request for a full queue is refused before its
  // image is decoded, through `done` (Rejected) like any rejection. `id`: set to the queued
  // request's id, for cancel() (left alone for a refused one).
  int classify(const std::string& model, std::string image_bytes, int top_k,
               std::function<void(ClassifyResult)> done, const RequestOptions& options = {},
               RequestId* id = nullptr);

  // One image to several models (a model group's members), decoded once per distinct
  // preprocessing: members that prepare images alike share the decoded input. Each
  // accepted member's answer comes through done(k, result), k its index in `models`;
  // returns classify's code per member (0: accepted, done will be called). `ids`: set to one
  // id per member, the queued request's (for cancel()) or 0 for a refused member.
  std::vector<int> classify_each(const std::vector<std::string>& models, std::string image_bytes,
                                 int top_k, std::function<void(size_t, ClassifyResult)> done,
                                 const RequestOptions& options = {},
                                 std::vector<RequestId>* ids = nullptr);

  // One image prepared for several models (a model group's members), decoded once per
  // distinct preprocessing, to be submitted later (submit_together). rc[k]: 0 prepared (then
  // inputs[k] is set; members that prepare alike share one), 404 unknown model, 400 not a
  // decodable image, 413 over max_image_bytes. Runs on the caller's thread.
  struct Prepared {
    std::vector<int> rc;
    std::vector<std::shared_ptr<const Input>> inputs;
  };
  Prepared prepare_each(const std::vector<std::string>& models,
                        const std::string& image_bytes) const;

  // Prepared inputs for one model that reach the controller together (one event), each with
  // its own options (options.size() == inputs.size()): all are queued before its batching
  // policy is asked, so they can run as one batch (an ensemble dispatcher's batch for one
  // member). done(i, result) answers inputs[i] as classify answers one. Returns 404 unknown
  // model, 400 when an input was prepared for another input size (nothing is submitted),
  // 503 when the engine is stopping, 0 accepted (then `ids`, when given, holds the queued
  // requests' ids in input order, for cancel()).
  int submit_together(const std::string& model, std::vector<std::shared_ptr<const Input>> inputs,
                      std::vector<RequestOptions> options, int top_k,
                      std::function<void(size_t, ClassifyResult)> done,
                      std::vector<RequestId>* ids = nullptr);

  // Same as classify but with an already preprocessed input (no OpenCV), e.g. for the
  // profiled executor or benchmarks. `input` may be empty for the profiled executor.
  int submit_raw(const std::string& model, std::vector<float> input, int top_k,
                 std::function<void(ClassifyResult)> done, const RequestOptions& options = {});

  // Several preprocessed inputs for one model that reach the controller together (one event):
  // all are queued before its batching policy is asked, so they can run as one batch (an
  // ensemble dispatcher's batch for one member). done(i, result) answers inputs[i], as
  // submit_raw answers one. Returns 404 unknown model, 400 when an input has the wrong size
  // (nothing is submitted then), 503 when the engine is stopping, 0 accepted.
  int submit_raw_together(const std::string& model, std::vector<std::vector<float>> inputs,
                          int top_k, std::function<void(size_t, ClassifyResult)> done,
                          const RequestOptions& options = {});

  // A tensor request (KServe v2 infer): `input` is one preprocessed C x H x W float tensor of
  // the model's input size; no image decoding. Answers like classify, with
  // ClassifyResult::output holding the model's output row (no softmax, no top-k).
  // Returns 404 unknown model, 400 when input.size() is not 3 x height x width, 0 accepted
  // (then the request's id is in *id when given, for cancel()).
  int infer(const std::string& model, std::vector<float> input,
            std::function<void(ClassifyResult)> done, const RequestOptions& options = {},
            RequestId* id = nullptr);

  // Cancels accepted request `id` (its answer is no longer wanted): a queued request leaves
  // its queue and is answered Cancelled; one already in a batch is answered Cancelled when
  // the batch ends (the batch still runs). Nothing happens for an answered or unknown id.
  void cancel(RequestId id);

  // The tensor sizes of a registered model, or nothing. Cheap (no control-thread round trip).
  struct Tensors {
    int height = 0, width = 0;  // input: 3 x height x width floats
    uint32_t classes = 0;       // output row width; 0 when unknown (profiled executor)
  };
  std::optional<Tensors> tensors(const std::string& model) const;
  // The class labels of a registered model as registered (may be empty; empty for an unknown
  // model). A copy; no control-thread round trip, so engine callbacks may call it too.
  std::vector<std::string> labels(const std::string& model) const;

  std::string metrics_text() const;
  bool cuda_available() const;
  // The SLO of requests to models registered without one (EngineOptions::slo), seconds.
  std::optional<double> default_slo() const;
  // Engine time (seconds since the engine started): the clock of the controller's events, so
  // quantum ticks fall at its multiples. Lets a driver start a run at a known tick phase.
  Time now() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace servelab::runtime
