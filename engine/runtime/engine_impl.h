// Private state of the Engine (engine.h), shared by engine.cpp (threads, control loop,
// actions), engine_models.cpp (registration, status, metrics) and engine_requests.cpp
// (classify, submit_raw, worker jobs). Not part of the contract.
//
// Threads: the caller's threads (HTTP handlers) preprocess and submit; k worker TaskThreads
// run batches; one loader TaskThread runs loads and evictions FIFO (evictions emitted before
// a load are carried out before it); one control thread runs the controller's timers.
// The Controller, the metrics and the action buffer belong to whoever holds `ctl_mu`
// (engine_control.cpp): a thread that posts an event runs it itself when the lock is free
// (an HTTP thread its arrival, a worker its batch's completion), so an arrival costs no
// thread hand-off; when the lock is taken the event waits in the inbox for the holder or
// the control thread. `done` callbacks run on engine threads only (answers produced while
// a caller's thread holds the lock wait in the inbox for an engine thread): Ok answers after
// the thread has released the lock, other outcomes under it (see finish()).
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

#include "engine/control/action_carrier.h"
#include "engine/control/cache_trace.h"
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
  std::vector<BatchSeconds> batch_seconds;  // the cost profile's prior (ModelStatus)
};

// One accepted request, from classify/submit_raw until `done` is called.
struct Pending {
  Request request;
  // Shared, not copied: a group's members decoded once and prepared inputs
  // (submit_together) reach the executor as they are.
  std::shared_ptr<const Input> input;
  int top_k = 5;  // 0: a tensor request (infer): answer the output row, not classes
  std::function<void(ClassifyResult)> done;
  std::function<void()> on_dispatch;  // RequestOptions::on_dispatch; cleared once called
  std::shared_ptr<const ModelEntry> model;  // labels
  // Written by the worker that ran the batch, read by the control thread after batch_done.
  std::vector<std::pair<std::string, float>> top;
  std::vector<float> output;
  std::string error;
  LoadParts private_load;  // EngineOptions::private_weights: its batch's own load
};

// A request's result, waiting to be given to its `done`.
struct Answer {
  std::unique_ptr<Pending> pending;
  ClassifyResult result;
};

struct Engine::Impl {
  explicit Impl(EngineOptions o);

  // Runs `f(now)` under the control lock, then carries out the actions it left (`actions`):
  // on this thread when the lock is free and nothing waits before `f` (an engine thread also
  // runs what waits), else later on an engine thread. Ignored once stopping.
  void post(std::function<void(Time)> f);
  // Runs `f(now)` like post() and waits for its result; directly when this thread holds the
  // lock already (e.g. from a `done` callback). Throws std::future_error once stopping.
  template <class F>
  auto query(F f) -> decltype(f(Time{}));

  void control_main();
  bool holds_control() const;  // this thread holds ctl_mu
  bool is_engine_thread() const;  // the control thread, a worker or the loader
  void mark_engine_thread() const;
  // With ctl_mu held: runs the waiting events and due timers, and tells the control thread
  // when the controller's next timer moved earlier.
  void run_held();
  // With ctl_mu held: hands answers held back to the inbox, publishes the controller's next
  // timer (waking the control thread when it moved earlier or when work waits for an engine
  // thread). True when this thread is done: nothing waits, or a caller's thread leaves it.
  bool publish_held();
  struct Carrier;
  void carry_out();                 // ctl_mu held: executes the actions until none is left
  void evict(const EvictAction& e);  // ctl_mu held: posts the eviction to the loader
  void load(const LoadAction& l);    // ctl_mu held: posts the load to the loader
  void report_load(const LoadAction& l, Time start, bool ok);  // loader thread: on_load
  void report_violations();  // ctl_mu held: logs new contract violations once each
  void run_batch(Batch b);   // ctl_mu held: hands a batch to its worker
  // ctl_mu held: answers one request (on an engine thread: an Ok answer into ready_answers,
  // given once the lock is released, others at once; from a caller's thread the answer waits
  // in the inbox).
  void finish(const RequestOutcome& o);
  // Without ctl_mu: calls each answer's `done` (on an engine thread).
  static void give_answers(std::vector<Answer>& answers);
  // Hands an accepted request to the controller; its id into *id (when given).
  int accept(std::shared_ptr<const Input> input, int top_k,
             std::function<void(ClassifyResult)> done, std::shared_ptr<const ModelEntry> m,
             const RequestOptions& ro,
             RequestId* id = nullptr);
  // submit_raw (top_k >= 1) and infer (top_k 0): a preprocessed C x H x W input.
  int submit_tensor(const std::string& model, std::vector<float> input, int top_k,
                    std::function<void(ClassifyResult)> done, const RequestOptions& ro,
                    RequestId* id = nullptr);
  std::shared_ptr<const ModelEntry> find(const std::string& name) const;
  // A request of model `m` arriving now; its deadline from ro's SLO, else the model's, else
  // the engine default (none: kNever).
  std::unique_ptr<Pending> make_pending(std::shared_ptr<const ModelEntry> m,
                                        std::shared_ptr<const Input> input,
                                        int top_k, std::function<void(ClassifyResult)> done,
                                        const RequestOptions& ro);
  // Any thread, before decoding: when `m`'s queue is at its bound, the request goes to the
  // controller without an image, is rejected there like any other, and `done` is answered
  // (returns true). Otherwise returns false with `done` untouched.
  bool refuse_if_full(const std::shared_ptr<const ModelEntry>& m, int top_k,
                      std::function<void(ClassifyResult)>& done, const RequestOptions& ro);
  ModelStatus status_of(const ModelEntry& e);  // control thread

  // Registration's steps, in order (engine_models.cpp says what each does).
  void reserve_name(const ModelSpec& spec, ModelEntry& entry);
  void unreserve_name(const std::string& name);
  ModelInfo model_info(ModelEntry& entry) const;
  std::string place(const ModelEntry& entry, const ModelInfo& info);
  void publish(const std::shared_ptr<ModelEntry>& entry);

  EngineOptions opts;
  WallClock clock;
  std::unique_ptr<Executor> exec;
  CostProfile cost_priors;  // opts.cost_profile's entries (empty without one); read-only
  Tier exec_tier = Tier::Host;

  // Guarded by ctl_mu (see the top of this file).
  std::mutex ctl_mu;
  std::unique_ptr<Controller> ctl;
  std::unique_ptr<ContractMonitor> contract;  // the controller's contract, as carried out
  ActionBuffers actions;  // the controller's (ctl_mu; action_carrier.h)
  EngineMetrics metrics;
  size_t violations_logged = 0;
  std::unique_ptr<CacheTrace> cache_trace;  // the executing tier's, while one is recorded
  std::vector<std::function<void(Time)>> running;  // the inbox events being run
  std::vector<RequestOutcome> held_answers;  // answered on a caller's thread: for an engine thread
  // Ok answers finished on an engine thread, given (their `done` called) by that thread once
  // it has released ctl_mu (give_answers): a batch's answers build and post HTTP responses,
  // and under the lock they made arrivals meet it taken and wake the control thread.
  std::vector<Answer> ready_answers;

  // Pending requests by id; locked by the caller threads (insert), the control thread
  // (dispatch, completion) and the destructor (fail the rest).
  std::mutex pending_mu;
  std::unordered_map<RequestId, std::unique_ptr<Pending>> pending;
  std::atomic<RequestId> next_request{1};
  mutable std::atomic<uint64_t> images_decoded{0};  // classify's decodes (servelab_images_decoded_total)

  std::mutex inbox_mu;
  std::condition_variable inbox_cv;  // wakes the control thread
  std::vector<std::function<void(Time)>> inbox;
  bool stopping = false;  // guarded by inbox_mu
  Time wake_at = kNever;  // guarded by inbox_mu: the controller's next timer, as last published

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
  if (holds_control()) {
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
  post([task](Time now) { (*task)(now); });  // here at once when nothing waits before it
  return result.get();
}

}  // namespace servelab::runtime
