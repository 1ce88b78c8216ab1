#include "simulator/simulator.h"

#include <algorithm>
#include <iterator>
#include <limits>
#include <random>

#include "common/huge_pages.h"
#include "results/offline_cache.h"
#include "simulator/cluster.h"
#include "simulator/run_context.h"
#include "simulator/shared_cores.h"

namespace servelab::sim {

namespace {

void prepare_records(RunContext& ctx) {
  results::RunRecords& rec = ctx.records;
  rec.model_names = target_names(ctx.setup);
  rec.slo = ctx.setup.slo;
  rec.warmup = ctx.schedule.warmup();
}

// A closed loop whose clients all start at once, on one server, opens with a cold burst the
// profile measured (profile-level: the profiler measures them on one probe).
void replay_cold_burst(RunContext& ctx, Clients& clients, FrontEnd& front_end) {
  auto* closed = dynamic_cast<ClosedLoopClients*>(&clients);
  if (!closed) return;
  const uint64_t first = closed->opening().size();
  if (!closed->start_together() || first <= 1) return;
  std::mt19937_64 burst_rng(ctx.setup.seed ^ 0x165667b19e3779f9ULL);
  front_end.replay_opening(
      sample_cold_burst(ctx.setup.cold_bursts, uint32_t(first), ctx.setup.noise, burst_rng));
}

// cluster.cores, where the servers' workers outnumber them (else every worker has a core).
std::unique_ptr<SharedCores> shared_cores(Simulation& sim, const SimulationSetup& setup) {
  const uint64_t workers = uint64_t(setup.cluster.servers) * setup.control.workers;
  if (setup.cluster.cores == 0 || setup.cluster.cores >= workers) return nullptr;
  return std::make_unique<SharedCores>(sim, setup.cluster.cores);
}

void collect_counters(const Cluster& cluster, SimulationResult& result) {
  results::RunRecords& rec = result.records;
  uint64_t batches = 0, batched = 0;
  for (const auto& s : cluster.servers()) {
    const ControllerStats& st = s->stats();
    rec.loads += st.loads;
    rec.evictions += st.evictions;
    rec.hits += st.hits;
    rec.misses += st.misses;
    batches += s->batches();
    batched += s->batched_requests();
    if (cluster.servers().size() > 1)
      result.servers.push_back({s->arrived(), s->batches(), s->compute_seconds()});
    for (const std::string& v : s->contract().violations()) result.violations.push_back(v);
  }
  rec.mean_batch_size = batches ? double(batched) / double(batches) : 0;
}

// Each traced server's executing tier against its offline optimum, summed over the servers
// (each had its own accesses: the sum of their optima bounds the cluster's).
void bound_cache_optimum(const Cluster& cluster, const SimulationSetup& setup,
                         results::RunRecords& rec) {
  std::vector<uint64_t> sizes;
  for (const SimModel& m : setup.models) sizes.push_back(m.profile.size_bytes);
  results::CacheOptimum sum{tier_name(setup.control.exec_tier)};
  bool any = false;
  for (const auto& s : cluster.servers()) {
    if (const CacheTrace* trace = s->cache_trace()) {
      add_cache_optimum(*trace, sizes, sum);
      any = true;
    }
  }
  if (any) rec.cache_optimum = sum;
}

}  // namespace

double speed_at(const std::vector<SimulationSetup::SpeedWindow>& trace, Time t) {
  return speed_factor_at(trace, t);
}

std::vector<std::string> target_names(const SimulationSetup& setup) {
  std::vector<std::string> names;
  for (const SimModel& m : setup.models) names.push_back(m.name);
  for (const SimGroup& g : setup.groups) names.push_back(g.name);
  return names;
}

double SimulationSetup::speed_at(Time t) const { return sim::speed_at(speed_trace, t); }

namespace {

// Keeps every record, in id order (simulate()'s result.records.requests).
class CollectRecords : public results::RecordSink {
 public:
  explicit CollectRecords(std::vector<results::RequestRecord>& out) : out_(out) {}
  void add(const results::RequestRecord& r) override { out_.push_back(r); }

 private:
  std::vector<results::RequestRecord>& out_;
};

}  // namespace

SimulationResult simulate(const SimulationSetup& setup, const workloads::Workload& workload) {
  std::vector<results::RequestRecord> requests;
  reserve_huge(requests, workload.models.size());
  CollectRecords collect(requests);
  SimulationResult result = simulate(setup, workload, collect);
  result.records.requests = std::move(requests);
  return result;
}

SimulationResult simulate(const SimulationSetup& setup, const workloads::Workload& workload,
                          results::RecordSink& sink) {
  GeneratedSchedule schedule(workload);
  return simulate(setup, schedule, sink);
}

SimulationResult simulate(const SimulationSetup& setup, workloads::WorkloadStream& workload,
                          results::RecordSink& sink) {
  StreamedSchedule schedule(workload);
  return simulate(setup, schedule, sink);
}

SimulationResult simulate(const SimulationSetup& setup, Schedule& schedule,
                          results::RecordSink& sink) {
  SimulationResult result;
  Simulation sim(make_event_list(setup.event_list));
  RunContext ctx(sim, setup, schedule, result, sink);
  ctx.machine = machine_tables(setup);
  std::unique_ptr<SharedCores> cores = shared_cores(sim, setup);
  ctx.cores = cores.get();
  Cluster cluster(ctx);
  std::unique_ptr<Clients> clients = make_clients(ctx, cluster);
  prepare_records(ctx);
  if (setup.cluster.servers == 1) replay_cold_burst(ctx, *clients, cluster.front_end(0));
  cluster.start(*clients);
  if (ctx.window.end() > 0) sim.run(setup.max_time);
  clients->open_unsent();
  ctx.window.flush_all();
  result.events = sim.events_processed();
  result.end_time = sim.now();
  result.lost = ctx.window.end() - cluster.completed();
  collect_counters(cluster, result);
  bound_cache_optimum(cluster, setup, result.records);
  if (!cluster.placement().everywhere()) result.hosts = cluster.placement().hosts;
  return result;
}

}  // namespace servelab::sim
