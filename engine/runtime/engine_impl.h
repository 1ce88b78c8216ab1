// Private state of the Engine (engine.h), shared by engine.cpp (threads, control loop,
// actions), engine_models.cpp (registration, status, metrics) and engine_requests.cpp
// (classify, submit_raw, worker jobs). Not part of the contract.
//
// Threads: the caller's threads (HTTP handlers) preprocess and post; one control thread
// owns the Controller, the metrics and the action buffer and runs every closure posted to
// the inbox; k worker TaskThreads run batches; one loader TaskThread runs loads and
// evictions FIFO (evictions emitted before a load are carried out before it).
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "engine/control/contract_monitor.h"
#include "engine/runtime/engine.h"
#include "engine/runtime/executor.h"
#include "engine/runtime/metrics.h"
#include "engine/runtime/task_thread.h"
#include "engine/runtime/wall_clock.h"

namespace servelab::runtime {

// A registered model as the facade sees it. Immutable once published.
struct ModelEntry {
  ModelId id = 0;
  ModelSpec spec;
  ModelMeasure measure;
  uint64_t size_bytes = 0;
  uint32_t contexts = 1;
};

// One accepted request, from classify/submit_raw until `done` is called.
struct Pending {
  Request request;
  Input input;
  int top_k = 5;  // 0: a tensor request (infer): answer the output row, not classes
  std::function<void(ClassifyResult)> done;
  std::shared_ptr<const ModelEntry> model;  // labels
  // Written by the worker that ran the batch, read by the control thread after batch_done.
  std::vector<std::pair<std::string, float>> top;
  std::vector<float> output;
  std::string error;
};

struct Engine::Impl {
  explicit Impl(EngineOptions o);

  // Runs `f(now)` on the control thread, then carries out the actions it left in `out`.
  // Ignored once stopping.
  void post(std::function<void(Time)> f);
  // Runs `f(now)` on the control thread and waits for its result (directly when called
  // from the control thread itself, e.g. from a `done` callback).
  template <class F>
  auto query(F f) -> decltype(f(Time{}));

  void control_main();
  void carry_out();          // control thread: executes and clears `out`
  void report_violations();  // control thread: logs new contract violations once each
  void run_batch(Batch b);   // control thread: hands a batch to its worker
  void finish(const RequestOutcome& o);  // control thread: answers one request
  int accept(Input input, int top_k, std::function<void(ClassifyResult)> done,
             std::shared_ptr<const ModelEntry> m, const RequestOptions& ro);
  // submit_raw (top_k >= 1) and infer (top_k 0): a preprocessed C x H x W input.
  int submit_tensor(const std::string& model, std::vector<float> input, int top_k,
                    std::function<void(ClassifyResult)> done, const RequestOptions& ro);
  std::shared_ptr<const ModelEntry> find(const std::string& name) const;
  // A request of model `m` arriving now; its deadline from ro's SLO, else the model's, else
  // the engine default (none: kNever).
  std::unique_ptr<Pending> make_pending(std::shared_ptr<const ModelEntry> m, Input input,
                                        int top_k, std::function<void(ClassifyResult)> done,
                                        const RequestOptions& ro);
  // Any thread, before decoding: when `m`'s queue is at its bound, the request goes to the
  // controller without an image, is rejected there like any other, and `done` is answered
  // (returns true). Otherwise returns false with `done` untouched.
  bool refuse_if_full(const std::shared_ptr<const ModelEntry>& m, int top_k,
                      std::function<void(ClassifyResult)>& done, const RequestOptions& ro);
  ModelStatus status_of(const ModelEntry& e);  // control thread

  EngineOptions opts;
  WallClock clock;
  std::unique_ptr<Executor> exec;
  CostProfile cost_priors;  // opts.profile_file's entries (empty without one); read-only
  Tier exec_tier = Tier::Host;

  // Control thread only.
  std::unique_ptr<Controller> ctl;
  std::unique_ptr<ContractMonitor> contract;  // the controller's contract, as carried out
  ActionBuffer out;
  EngineMetrics metrics;
  std::thread::id control_id;
  size_t violations_logged = 0;

  // Pending requests by id; locked by the caller threads (insert), the control thread
  // (dispatch, completion) and the destructor (fail the rest).
  std::mutex pending_mu;
  std::unordered_map<RequestId, std::unique_ptr<Pending>> pending;
  std::atomic<RequestId> next_request{1};

  std::mutex inbox_mu;
  std::condition_variable inbox_cv;
  std::vector<std::function<void(Time)>> inbox;
  bool stopping = false;  // guarded by inbox_mu

  // Registry of names; any thread.
  mutable std::shared_mutex reg_mu;
  std::unordered_map<std::string, std::shared_ptr<const ModelEntry>> by_name;
  std::vector<std::shared_ptr<const ModelEntry>> by_id;  // null once removed
  std::set<std::string> registering;
  ModelId next_id = 0;

  std::vector<std::unique_ptr<TaskThread>> workers;
  std::unique_ptr<TaskThread> loader;
  std::thread control;
};

template <class F>
auto Engine::Impl::query(F f) -> decltype(f(Time{})) {
  using R = decltype(f(Time{}));
  if (std::this_thread::get_id() == control_id) {
    if constexpr (std::is_void_v<R>) {
      f(clock.now());
      carry_out();
      return;
    } else {
      R r = f(clock.now());
      carry_out();
      return r;
    }
  }
  auto task = std::make_shared<std::packaged_task<R(Time)>>(std::move(f));
  std::future<R> result = task->get_future();
  post([task](Time now) { (*task)(now); });
  return result.get();
}

}  // namespace servelab::runtime
