// Engine threads: construction and shutdown, and carrying out the controller's actions
// (see engine_impl.h for who owns what; engine_control.cpp for the control lock).
#include <algorithm>
#include <cstdio>
#include <cmath>
#include <future>
#include <optional>
#include <utility>

#include "engine/control/action_carrier.h"
#include "engine/control/private_weights.h"
#include "engine/runtime/engine_impl.h"
#include "engine/runtime/top_classes.h"

namespace servelab::runtime {
namespace {

std::unique_ptr<Executor> make_executor(const EngineOptions& o) {
  if (o.executor == "torch")
    return make_torch_executor(o.device, o.intra_op_threads,
                               {o.weight_store, o.weight_store_holder});
  if (o.executor == "profiled") {
    if (!o.cost_profile)
      throw ConfigError("the profiled executor needs a cost profile (EngineOptions::cost_profile)");
    return make_profiled_executor(*o.cost_profile, CostNoise::None, 1);
  }
  throw ConfigError("unknown executor '" + o.executor + "' (expected torch or profiled)");
}

// Private weights load a copy per batch: nothing may be cached or shared besides.
void check_private_weights(const EngineOptions& o) {
  if (!o.private_weights) return;
  if (!o.weight_store.empty())
    throw ConfigError("private weights share no model: they cannot have a weight store");
  check_private_weights_tiers(o.control);
}

// A batch's private load ran after the controller saw it start: in the answer its time is
// load, not compute.
void add_private_load(const LoadParts& load, ClassifyResult& r) {
  const double moved = std::min(load.total(), r.compute_s);
  r.load_s += moved;
  r.compute_s -= moved;
  r.load_parts += load;
}

// Runs `exec.load_private(model)` on `loader` (in line with its other loads) and waits.
std::unique_ptr<PrivateCopy> load_private_on(TaskThread& loader, Executor& exec, ModelId model) {
  auto done = std::make_shared<std::promise<std::unique_ptr<PrivateCopy>>>();
  auto copy = done->get_future();
  loader.post([done, &exec, model] {
    try {
      done->set_value(exec.load_private(model));
    } catch (...) {
      done->set_exception(std::current_exception());
    }
  });
  return copy.get();  // a loader stopped first: broken_promise, and the batch fails
}

// The `p->top_k` most probable classes of `logits` with their labels, into p->top.
void top_classes(const std::vector<float>& logits, Pending* p) {
  thread_local std::vector<ClassProbability> best;  // plain memory: kept per worker thread
  top_softmax(logits, static_cast<size_t>(std::max(p->top_k, 1)), best);
  const auto& labels = p->model->spec.labels;
  p->top.clear();
  for (const ClassProbability& c : best)
    p->top.emplace_back(c.index < labels.size() ? labels[c.index] : std::to_string(c.index),
                        c.probability);
}

}  // namespace

Engine::Impl::Impl(EngineOptions o) : opts(std::move(o)) {
  if (opts.control.workers == 0) throw ConfigError("the engine needs at least one worker");
  exec = make_executor(opts);
  if (opts.cost_profile) cost_priors = *opts.cost_profile;
  exec_tier = exec->exec_tier();
  opts.control.exec_tier = exec_tier;
  check_private_weights(opts);
  ctl = std::make_unique<Controller>(opts.control);  // throws ConfigError for bad policies
  contract = std::make_unique<ContractMonitor>(opts.control);
}

Engine::Engine(EngineOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {
  Impl& s = *impl_;
  for (uint32_t w = 0; w < s.opts.control.workers; ++w)
    s.workers.push_back(std::make_unique<TaskThread>([&s] {
      s.mark_engine_thread();
      s.exec->prepare_thread();
    }));
  s.loader = std::make_unique<TaskThread>([&s] { s.mark_engine_thread(); });
  s.control = std::thread([&s] { s.control_main(); });
}

Engine::~Engine() {
  Impl& s = *impl_;
  {
    std::lock_guard lock(s.inbox_mu);
    s.stopping = true;
  }
  s.inbox_cv.notify_all();
  if (s.control.joinable()) s.control.join();
  for (auto& w : s.workers) w->stop();  // running batches finish; their results are dropped
  s.loader->stop();
  std::vector<Answer> answers;  // none is left unless a thread stopped between lock and give
  {
    std::lock_guard ctl_lock(s.ctl_mu);  // a caller's thread may still be running an event
    std::lock_guard lock(s.inbox_mu);
    s.inbox.clear();
    answers.swap(s.ready_answers);
  }
  Impl::give_answers(answers);
  std::unordered_map<RequestId, std::unique_ptr<Pending>> left;
  {
    std::lock_guard lock(s.pending_mu);
    left.swap(s.pending);
  }
  for (auto& [id, p] : left) {
    ClassifyResult r;
    r.status = RequestStatus::Failed;
    r.error = "the engine stopped before the request was answered";
    try {
      if (p->done) p->done(std::move(r));
    } catch (...) {
    }
  }
}

// The controller's actions, carried out on the engine's threads (action_carrier.h).
struct Engine::Impl::Carrier {
  Impl& e;
  void evict(const EvictAction& a) { e.evict(a); }
  void load(const LoadAction& l) {
    if (e.cache_trace && l.to == e.exec_tier) ++e.cache_trace->loads;
    e.load(l);
  }
  // A refused batch (its worker busy, say) still runs after the worker's current job: the
  // violation is logged, and its requests are answered rather than lost.
  void dispatch(Batch& b, bool /*contract_ok*/) {
    if (e.cache_trace) e.cache_trace->access(b.model);
    e.run_batch(std::move(b));
  }
  void complete(const RequestOutcome& o) { e.finish(o); }
};

void Engine::Impl::carry_out() {
  // A `done` callback may act on the controller (Engine::cancel): carry_out repeats until
  // none is left.
  Carrier carrier{*this};
  actions.carry_out(*contract, carrier);
  if (contract->violation_count() > violations_logged) report_violations();
}

void Engine::Impl::evict(const EvictAction& e) {
  loader->post([this, e] {
    exec->evict(e.model, e.tier);
    post([this, e](Time now) { ctl->on_evict_done(e.model, e.tier, now, actions.out()); });
  });
}

void Engine::Impl::load(const LoadAction& l) {
  loader->post([this, l] {
    bool ok = true;
    const Time start = clock.now();
    LoadParts parts;
    try {
      parts = exec->load(l.model, l.from, l.to);
    } catch (const std::exception&) {
      ok = false;
    }
    if (opts.on_load) report_load(l, start, ok);
    post([this, l, ok, parts](Time now) {
      if (ok) metrics.on_load(l.model, l.to, parts, now);
      contract->on_load_done(l.model, l.to, ok);
      ctl->on_load_done(l.model, l.to, ok, now, actions.out());
    });
  });
}

void Engine::Impl::report_load(const LoadAction& l, Time start, bool ok) {
  LoadSpan span{"", l.from, l.to, start, clock.now(), ok};
  {
    std::shared_lock lock(reg_mu);
    if (l.model < by_id.size() && by_id[l.model]) span.model = by_id[l.model]->spec.name;
  }
  opts.on_load(span);
}

void Engine::Impl::report_violations() {
  const auto& v = contract->violations();
  for (; violations_logged < contract->violation_count(); ++violations_logged)
    if (violations_logged < v.size())
      std::fprintf(stderr, "servelab engine: controller contract violation: %s\n",
                   v[violations_logged].c_str());
}

void Engine::Impl::run_batch(Batch b) {
  std::vector<Pending*> items;
  items.reserve(b.requests.size());
  {
    std::lock_guard lock(pending_mu);
    for (const Request& r : b.requests) {
      auto it = pending.find(r.id);
      items.push_back(it == pending.end() ? nullptr : it->second.get());
    }
  }
  metrics.on_dispatch(b.model, static_cast<uint32_t>(b.requests.size()));
  for (Pending* p : items)  // the requests have left their queues (RequestOptions::on_dispatch)
    if (p && p->on_dispatch) std::exchange(p->on_dispatch, nullptr)();
  BatchId id = b.id;
  ModelId model = b.model;
  WorkerId worker = b.worker;
  workers[b.worker]->post([this, id, model, worker, items = std::move(items)] {
    bool ok = true;
    std::string error;
    std::optional<LoadParts> private_load;
    try {
      std::vector<const Input*> inputs;
      for (Pending* p : items) {
        if (!p) throw std::runtime_error("internal error: request payload missing");
        inputs.push_back(p->input.get());
      }
      std::vector<std::vector<float>> outputs;
      if (opts.private_weights) {
        std::unique_ptr<PrivateCopy> copy = load_private_on(*loader, *exec, model);
        private_load = copy->parts;
        for (Pending* p : items) p->private_load = copy->parts;
        exec->run_private(model, *copy, inputs, outputs);
      } else {
        exec->run(model, exec_tier, inputs, outputs);
      }
      for (size_t i = 0; i < items.size(); ++i) {
        if (items[i]->top_k == 0)
          items[i]->output = std::move(outputs[i]);
        else
          top_classes(outputs[i], items[i]);
      }
    } catch (const std::exception& e) {
      ok = false;
      error = e.what();
    }
    post([this, id, model, worker, ok, error, items, private_load](Time now) {
      if (private_load) metrics.on_private_load(model, *private_load);
      contract->on_batch_done(worker);
      if (!ok)
        for (Pending* p : items)
          if (p) p->error = "inference failed: " + error.substr(0, error.find('\n'));
      ctl->on_batch_done(id, ok, now, actions.out());
    });
  });
}

void Engine::Impl::finish(const RequestOutcome& o) {
  if (!is_engine_thread()) {
    held_answers.push_back(o);  // `done` runs on engine threads only (engine.h)
    return;
  }
  std::unique_ptr<Pending> p;
  {
    std::lock_guard lock(pending_mu);
    auto it = pending.find(o.request.id);
    if (it == pending.end()) return;
    p = std::move(it->second);
    pending.erase(it);
  }
  metrics.on_outcome(o);
  ClassifyResult r;
  r.status = o.status;
  r.batch_size = o.batch_size;
  if (o.request.deadline < kNever)
    r.slo_met = o.status == RequestStatus::Ok && o.finished <= o.request.deadline;
  time_split(o, &r.queue_s, &r.load_s, &r.compute_s);
  r.load_parts = metrics.load_parts(o);
  add_private_load(p->private_load, r);
  switch (o.status) {
    case RequestStatus::Ok:
      r.top = std::move(p->top);
      r.output = std::move(p->output);
      break;
    case RequestStatus::Timeout: r.error = "timed out waiting in the queue"; break;
    case RequestStatus::Rejected: r.error = "the model's queue is full"; break;
    case RequestStatus::Cancelled: r.error = "the request was cancelled"; break;
    case RequestStatus::Dropped: r.error = "dropped: past its deadline (SLO) before it was computed"; break;
    case RequestStatus::Failed:
      r.error = p->error.empty() ? "the request failed (model load failed or model removed)"
                                 : p->error;
      break;
  }
  if (o.status == RequestStatus::Ok) {  // given once the lock is released (ready_answers)
    ready_answers.push_back(Answer{std::move(p), std::move(r)});
    return;
  }
  // A failure may cancel its siblings (a v2 batch): under the lock the cancel takes effect
  // before the actions already decided (the next batch) are carried out.
  try {
    if (p->done) p->done(std::move(r));
  } catch (...) {
  }
}

void Engine::Impl::give_answers(std::vector<Answer>& answers) {
  for (Answer& a : answers) {
    try {
      if (a.pending->done) a.pending->done(std::move(a.result));
    } catch (...) {
    }
  }
  answers.clear();
}

bool Engine::cuda_available() const { return impl_->exec_tier == Tier::Device; }

Time Engine::now() const { return impl_->clock.now(); }

std::optional<double> Engine::default_slo() const { return impl_->opts.slo; }

}  // namespace servelab::runtime
