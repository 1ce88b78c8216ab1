#include "simulator/simulator.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <iterator>
#include <limits>
#include <random>

#include "simulator/simulation.h"

namespace servelab::sim {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Event tags: the kind in the top bits, its payload (request index, worker, load) below.
enum Kind : uint64_t {
  kSend = 0, kBatchDone = 1, kLoadDone = 2, kTimer = 3, kIoEnter = 4, kIoDone = 5,
  kClientSend = 6, kArrive = 7
};
constexpr int kKindShift = 60;
constexpr uint64_t kPayloadMask = (uint64_t(1) << kKindShift) - 1;
uint64_t make_tag(Kind k, uint64_t payload) { return (uint64_t(k) << kKindShift) | payload; }

double finite_or_nan(Time t) { return std::isfinite(t) ? t : kNaN; }

// One simulation run: the simulated executor (workers, loader), the clients and the
// controller, wired through one Simulation. Lives on the stack of simulate().
class Run final : public EventHandler {
 public:
  Run(const SimulationSetup& s, const workloads::Workload& w)
      : setup_(s), work_(w), sim_(make_event_list(s.event_list)), ctl_(s.control),
        rng_(s.seed), io_rng_(s.seed ^ 0xc2b2ae3d27d4eb4fULL),
        load_rng_(s.seed ^ 0x9e3779b97f4a7c15ULL), burst_rng_(s.seed ^ 0x165667b19e3779f9ULL),
        workers_(s.control.workers), running_(s.models.size(), 0),
        resident_(s.models.size()), done_(w.models.size(), 0) {}

  SimulationResult go();
  void on_event(uint64_t tag, Time now) override;

 private:
  struct Worker {
    bool busy = false;
    BatchId batch = 0;
    ModelId model = 0;
  };

  void check_workload() const;
  void add_models();
  void schedule_send(uint64_t index, Time at);
  void arrive(uint64_t index, Time now);
  void start_io(uint64_t index, Time now);
  void carry_out(Time now);
  void dispatch(const Batch& b, Time now);
  void load(const LoadAction& l, Time now);
  void complete(const RequestOutcome& o, Time now);
  void evict(const EvictAction& e, Time now);
  void arm_timer(Time now);
  void on_timer_event(uint64_t gen, Time now);
  void violation(std::string msg) {
    if (result_.violations.size() < 100) result_.violations.push_back(std::move(msg));
  }

  const SimulationSetup& setup_;
  const workloads::Workload& work_;
  Simulation sim_;
  Controller ctl_;
  ActionBuffer out_;
  std::vector<EvictAction> evicts_;
  std::mt19937_64 rng_;       // batch latency draws
  std::mt19937_64 io_rng_;    // preprocessing draws (own stream, as loads)
  std::mt19937_64 load_rng_;  // load time draws (own stream: profiles without load samples
                              // draw nothing, and batch draws do not shift when they do)
  std::mt19937_64 burst_rng_; // the opening burst's draw
  SimulationResult result_;

  std::vector<Worker> workers_;
  std::vector<uint32_t> running_;  // batches running per model
  std::vector<std::array<bool, kTierCount>> resident_;  // as the executor has carried it out
  uint32_t loads_in_flight_ = 0;
  uint64_t batches_ = 0, batched_requests_ = 0;

  Time timer_at_ = kNever;  // the earliest timer event that is still current
  uint64_t timer_gen_ = 0;  // timers of older generations are stale and skipped
  Time last_timer_ = -1;
  uint64_t same_time_timers_ = 0;

  uint64_t next_send_ = 0, completed_ = 0, pending_work_ = 0;  // pending non-timer events
  Time last_progress_ = 0;
  std::vector<uint8_t> done_;
  Time client_free_ = 0;              // the load generator's thread is busy until then
  uint32_t io_busy_ = 0;              // IO threads preprocessing a request
  std::vector<uint64_t> io_queue_;    // requests waiting for one, FIFO from io_next_
  size_t io_next_ = 0;
  std::vector<Time> opening_;         // a closed loop's first requests: measured intake times
};

void Run::check_workload() const {
  size_t n = work_.models.size();
  for (uint32_t m : work_.models) {
    if (m >= setup_.models.size()) {
      throw ConfigError("workload requests model index " + std::to_string(m) + " but only " +
                        std::to_string(setup_.models.size()) + " models are configured");
    }
  }
  if (work_.closed_loop) {
    if (work_.concurrency == 0 && n > 0) throw ConfigError("closed-loop workload with concurrency 0");
    if (!work_.think_times.empty() && work_.think_times.size() != n) {
      throw ConfigError("workload: think_times and models differ in length");
    }
  } else if (work_.send_times.size() != n) {
    throw ConfigError("workload: send_times and models differ in length");
  }
}

void Run::add_models() {
  const ControllerConfig& c = setup_.control;
  std::array<uint64_t, kTierCount> used_bytes{};
  std::array<uint32_t, kTierCount> used_models{};
  Tier top = Tier(std::min(int(setup_.preload_tier), int(c.exec_tier)));
  for (ModelId id = 0; id < setup_.models.size(); ++id) {
    const SimModel& m = setup_.models[id];
    ModelInfo info{m.name, m.profile.size_bytes, m.contexts, m.max_batch};
    auto fits = [&](int t) {
      for (int u = int(Tier::Host); u <= t; ++u) {
        const TierBudget& b = c.budgets[u];
        if (used_models[u] + 1 > b.models || m.profile.size_bytes > b.bytes - used_bytes[u]) {
          return false;
        }
      }
      return true;
    };
    int t = int(top);
    while (t > int(Tier::Disk) && !fits(t)) --t;
    for (int u = int(Tier::Disk); u <= t; ++u) {
      if (u > int(Tier::Disk)) {
        used_bytes[u] += m.profile.size_bytes;
        used_models[u] += 1;
      }
      resident_[id][u] = true;
    }
    ctl_.add_model(id, info, Tier(t));
  }
}

void Run::schedule_send(uint64_t index, Time at) {
  ++pending_work_;
  sim_.schedule(at, this, make_tag(kSend, index));
}

SimulationResult Run::go() {
  check_workload();
  add_models();
  uint64_t total = work_.models.size();
  result_.records.model_names.reserve(setup_.models.size());
  for (const SimModel& m : setup_.models) result_.records.model_names.push_back(m.name);
  result_.records.slo = setup_.slo;
  result_.records.warmup = work_.warmup;
  result_.records.requests.resize(total);
  for (uint64_t i = 0; i < total; ++i) {
    results::RequestRecord& r = result_.records.requests[i];
    r = {i, work_.models[i], kNaN, kNaN, kNaN, kNaN, 0, false, RequestStatus::Failed};
  }
  if (work_.closed_loop) {
    uint64_t first = std::min<uint64_t>(work_.concurrency, total);
    // All clients start at once on fresh connections: when each reaches the controller is
    // drawn from the cold bursts the profile measured, when it has some (the first request's
    // model's: the profiler measures them once, on a probe, for every model).
    const size_t thinks = std::min<size_t>(first, work_.think_times.size());
    bool together = std::all_of(work_.think_times.begin(), work_.think_times.begin() + thinks,
                                [](double t) { return t == 0; });
    if (together && first > 1)
      opening_ = setup_.models[work_.models[0]].profile.sample_cold_burst(
          uint32_t(first), setup_.noise, burst_rng_);
    for (next_send_ = 0; next_send_ < first; ++next_send_) {
      schedule_send(next_send_, work_.think_times.empty() ? 0 : work_.think_times[next_send_]);
    }
  } else if (total > 0) {
    next_send_ = 1;
    schedule_send(0, work_.send_times[0]);
  }
  arm_timer(0);
  if (total > 0) sim_.run(setup_.max_time);

  result_.events = sim_.events_processed();
  result_.end_time = sim_.now();
  result_.lost = total - completed_;
  const ControllerStats& st = ctl_.stats();
  results::RunRecords& rec = result_.records;
  rec.loads = st.loads;
  rec.evictions = st.evictions;
  rec.hits = st.hits;
  rec.misses = st.misses;
  rec.mean_batch_size = batches_ ? double(batched_requests_) / batches_ : 0;
  return std::move(result_);
}

void Run::on_event(uint64_t tag, Time now) {
  uint64_t payload = tag & kPayloadMask;
  switch (Kind(tag >> kKindShift)) {
    case kSend: {
      if (!work_.closed_loop && next_send_ < work_.models.size()) {
        schedule_send(next_send_, work_.send_times[next_send_]);
        ++next_send_;
      }
      // The load generator's thread sends one request at a time: a send that finds it busy
      // goes out when it is free.
      const ModelProfile& p = setup_.models[work_.models[payload]].profile;
      if (p.overhead_client > 0) {
        Time at = std::max(now, client_free_);
        client_free_ = at + p.overhead_client;
        if (at > now) {
          sim_.schedule(at, this, make_tag(kClientSend, payload));
          return;  // still pending
        }
      }
      [[fallthrough]];
    }
    case kClientSend: {
      --pending_work_;
      result_.records.requests[payload].arrival = now;  // the client's send, as loadgen records
      if (payload < opening_.size()) {  // the IO side's part is in the measured intake
        ++pending_work_;
        sim_.schedule(std::max(now, opening_[payload]), this, make_tag(kArrive, payload));
        return;
      }
      // The request reaches the controller after the client-side overhead the profile
      // measured (HTTP, then decode and preprocessing on an IO thread); 0 for server-side
      // profiles.
      const ModelProfile& p = setup_.models[work_.models[payload]].profile;
      Time delay = p.overhead_before - p.overhead_preprocess;
      if (p.overhead_before > 0) {
        ++pending_work_;
        sim_.schedule(now + delay, this, make_tag(kIoEnter, payload));
        return;
      }
      arrive(payload, now);
      break;
    }
    case kIoEnter:  // HTTP request read: preprocessing on a free IO thread, else wait for one
      if (io_busy_ < std::max(1u, setup_.io_threads)) start_io(payload, now);
      else io_queue_.push_back(payload);
      return;
    case kArrive:
      --pending_work_;
      arrive(payload, now);
      break;
    case kIoDone:
      --pending_work_;
      --io_busy_;
      if (io_next_ < io_queue_.size()) start_io(io_queue_[io_next_++], now);
      arrive(payload, now);
      break;
    case kBatchDone: {
      --pending_work_;
      Worker& w = workers_[payload];
      w.busy = false;
      --running_[w.model];
      ctl_.on_batch_done(w.batch, true, now, out_);
      break;
    }
    case kLoadDone: {
      --pending_work_;
      --loads_in_flight_;
      ModelId m = ModelId(payload / kTierCount);
      Tier to = Tier(payload % kTierCount);
      resident_[m][int(to)] = true;
      ctl_.on_load_done(m, to, true, now, out_);
      break;
    }
    case kTimer:
      on_timer_event(payload, now);
      return;  // carries out its own actions
  }
  carry_out(now);
}

void Run::arrive(uint64_t index, Time now) {
  Request r{index, work_.models[index], now, setup_.slo ? now + *setup_.slo : kNever};
  result_.records.requests[index].queued = now;
  ctl_.on_arrival(r, now, out_);
}

void Run::start_io(uint64_t index, Time now) {
  ++io_busy_;
  const ModelProfile& p = setup_.models[work_.models[index]].profile;
  sim_.schedule(now + p.sample_preprocess(setup_.noise, io_rng_), this, make_tag(kIoDone, index));
}

void Run::on_timer_event(uint64_t gen, Time now) {
  if (gen != timer_gen_) return;  // superseded by an earlier timer
  timer_at_ = kNever;
  bool idle = pending_work_ == 0 && loads_in_flight_ == 0 &&
              std::none_of(workers_.begin(), workers_.end(), [](const Worker& w) { return w.busy; });
  if (idle && (ctl_.total_queued() == 0 || now - last_progress_ > setup_.stall_timeout)) {
    sim_.stop();  // only timers could ever happen again: the remaining requests are lost
    return;
  }
  if (now == last_timer_) {
    if (++same_time_timers_ > 100000) {
      violation("controller: next_wakeup() does not move past now=" + std::to_string(now));
      sim_.stop();
      return;
    }
  } else {
    same_time_timers_ = 0;
  }
  last_timer_ = now;
  ++result_.timers;
  ctl_.on_timer(now, out_);
  carry_out(now);
}

void Run::arm_timer(Time now) {
  Time w = ctl_.next_wakeup();
  if (w >= timer_at_) return;  // the pending timer fires first; on_timer early is harmless
  timer_at_ = std::max(w, now);
  sim_.schedule(timer_at_, this, make_tag(kTimer, ++timer_gen_));
}

void Run::carry_out(Time now) {
  while (true) {
    for (const Batch& b : out_.dispatches) dispatch(b, now);
    for (const LoadAction& l : out_.loads) load(l, now);
    for (const RequestOutcome& o : out_.completions) complete(o, now);
    evicts_.swap(out_.evicts);
    out_.clear();
    if (evicts_.empty()) break;
    for (const EvictAction& e : evicts_) evict(e, now);  // may refill out_
    evicts_.clear();
  }
  arm_timer(now);
}

void Run::dispatch(const Batch& b, Time now) {
  if (b.worker >= workers_.size() || workers_[b.worker].busy) {
    violation("batch " + std::to_string(b.id) + " dispatched to busy or unknown worker " +
              std::to_string(b.worker));
    return;
  }
  if (b.model >= setup_.models.size() || b.requests.empty()) {
    violation("batch " + std::to_string(b.id) + " has an unknown model or no requests");
    return;
  }
  if (!resident_[b.model][int(setup_.control.exec_tier)]) {
    violation("batch " + std::to_string(b.id) + " of model " + setup_.models[b.model].name +
              " dispatched while not resident in the executing tier");
  }
  for (const Request& r : b.requests) {
    if (r.id >= done_.size() || done_[r.id]) {
      violation("batch " + std::to_string(b.id) + " carries finished or unknown request " +
                std::to_string(r.id));
    }
  }
  Worker& w = workers_[b.worker];
  w = {true, b.id, b.model};
  ++running_[b.model];
  ++batches_;
  batched_requests_ += b.requests.size();
  uint32_t size = static_cast<uint32_t>(b.requests.size());
  const ModelProfile& p = setup_.models[b.model].profile;
  Time cost = (setup_.jitter >= 0 && setup_.noise != CostNoise::None
                   ? p.sample_batch_latency(size, setup_.jitter, rng_)
                   : p.sample_batch_latency(size, setup_.noise, rng_)) *
              setup_.speed_at(now);
  ++pending_work_;
  sim_.schedule(now + cost, this, make_tag(kBatchDone, b.worker));
}

void Run::load(const LoadAction& l, Time now) {
  if (++loads_in_flight_ > setup_.control.max_loads_in_flight) {
    violation("more than max_loads_in_flight loads at t=" + std::to_string(now));
  }
  Time cost = setup_.models[l.model].profile.sample_load_seconds(l.from, l.to, setup_.noise,
                                                                  load_rng_) *
              setup_.speed_at(now);
  ++pending_work_;
  sim_.schedule(now + cost, this, make_tag(kLoadDone, uint64_t(l.model) * kTierCount + int(l.to)));
}

void Run::evict(const EvictAction& e, Time now) {
  if (e.tier == setup_.control.exec_tier) {
    if (running_[e.model] > 0) {
      violation("model " + setup_.models[e.model].name + " evicted while a batch uses it");
    }
    if (!resident_[e.model][int(e.tier)]) {
      violation("model " + setup_.models[e.model].name + " evicted while not resident");
    }
  }
  resident_[e.model][int(e.tier)] = false;
  ctl_.on_evict_done(e.model, e.tier, now, out_);
}

void Run::complete(const RequestOutcome& o, Time now) {
  RequestId id = o.request.id;
  if (id >= done_.size() || done_[id]) {
    violation("request " + std::to_string(id) + " completed twice or unknown");
    return;
  }
  done_[id] = 1;
  ++completed_;
  last_progress_ = now;
  results::RequestRecord& r = result_.records.requests[id];
  r.dispatch = finite_or_nan(o.assigned);
  r.start = finite_or_nan(o.started);
  // The client has the answer once the response overhead has passed.
  r.finish = (std::isfinite(o.finished) ? o.finished : now) +
             setup_.models[r.model].profile.overhead_after;
  r.batch_size = o.batch_size;
  r.waited_for_load = o.waited_for_load;
  r.status = o.status;
  if (work_.closed_loop && next_send_ < work_.models.size()) {
    Time think = work_.think_times.empty() ? 0 : work_.think_times[next_send_];
    schedule_send(next_send_, r.finish + think);
    ++next_send_;
  }
  if (completed_ == done_.size()) sim_.stop();
}

}  // namespace

double speed_at(const std::vector<SimulationSetup::SpeedWindow>& trace, Time t) {
  if (trace.empty() || t < trace.front().from) return 1;
  using Window = SimulationSetup::SpeedWindow;
  auto it = std::upper_bound(trace.begin(), trace.end(), t,
                             [](Time x, const Window& w) { return x < w.from; });
  return std::prev(it)->factor;
}

double SimulationSetup::speed_at(Time t) const { return sim::speed_at(speed_trace, t); }

SimulationResult simulate(const SimulationSetup& setup, const workloads::Workload& workload) {
  Run run(setup, workload);
  return run.go();
}

}  // namespace servelab::sim
