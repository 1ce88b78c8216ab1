// summarize() and percentile(): the numbers of summary.json (format in results/records.h).
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "results/latency_store.h"
#include "results/percentiles.h"
#include "results/records.h"

namespace servelab::results {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// NaN and infinities become JSON null (nlohmann would otherwise write invalid JSON).
nlohmann::json number(double v) {
  if (!std::isfinite(v)) return nullptr;
  return v;
}

// The running numbers of one subset of requests (the whole run, or one model), fed in id
// order. Requests sent before `warmup` count only towards throughput, which stays the whole
// run's. Latencies are kept (in a LatencyStore) because the percentiles are exact.
struct SubsetStats {
  uint64_t seen = 0, counted = 0, done = 0, completed = 0;
  uint64_t with_slo = 0, within_slo = 0;  // counted requests with an SLO; answered Ok within it
  double slo_min = std::numeric_limits<double>::infinity();  // their SLOs' range (seconds)
  double slo_max = -std::numeric_limits<double>::infinity();
  double first_sent = std::numeric_limits<double>::infinity();
  double last_done = -std::numeric_limits<double>::infinity();
  double latency_sum = 0;  // ms, summed in id order
  double accuracy_sum = 0;         // over completed requests with a known accuracy
  uint64_t accuracy_known = 0;
  std::map<std::string, uint64_t> failed;

  // The latency (ms) goes to `keep` where there is one.
  void add(const RequestRecord& r, double warmup, const std::optional<double>& slo,
           LatencyStore* keep) {
    ++seen;
    first_sent = std::min(first_sent, r.arrival);
    if (r.status == RequestStatus::Ok) {
      ++done;
      last_done = std::max(last_done, r.finish);
    }
    if (r.arrival < warmup) return;
    ++counted;
    const double own_slo = std::isnan(r.slo) ? slo.value_or(kNaN) : r.slo;
    if (!std::isnan(own_slo)) {
      ++with_slo;
      slo_min = std::min(slo_min, own_slo);
      slo_max = std::max(slo_max, own_slo);
    }
    if (r.status != RequestStatus::Ok) {
      failed[status_name(r.status)]++;
      return;
    }
    const double lat = r.finish - r.arrival;
    ++completed;
    latency_sum += lat * 1e3;
    if (keep) keep->add(lat * 1e3);
    if (lat <= own_slo) within_slo++;  // false for NaN: no SLO
    if (!std::isnan(r.accuracy)) {
      accuracy_sum += r.accuracy;
      ++accuracy_known;
    }
  }
};

nlohmann::json failed_counts(const SubsetStats& s, uint64_t* total) {
  nlohmann::json f = nlohmann::json::object();
  *total = 0;
  for (const auto& [name, n] : s.failed) {
    f[name] = n;
    *total += n;
  }
  return f;
}

// The summary of one subset; `latency_ms` holds its latencies in any order (the
// percentiles, the mean and the max do not depend on it).
nlohmann::json subset_summary(const SubsetStats& s, const ValueChunks& latency_ms,
                              const std::optional<double>& slo) {
  nlohmann::json j;
  j["requests"] = s.counted;
  j["completed"] = s.completed;
  uint64_t failed_total = 0;
  nlohmann::json f = failed_counts(s, &failed_total);
  j["failed"] = failed_total;
  j["failed_by_status"] = f;
  // Completions over the run's span. Not over a window from the warm-up on: a batch's
  // answers come back together, and a window cut at an arbitrary time through those lumps
  // swings by a batch's worth (one 400-request run, 64-256 in flight: -10..-12% sim vs real
  // in the window, -1.8% over the run).
  const double span = s.last_done - s.first_sent;
  j["throughput_rps"] = number(s.done == 0 || span <= 0 ? kNaN : s.done / span);
  const size_t n = latency_ms.size();
  const double mean = n == 0 ? kNaN : s.latency_sum / double(n);
  static constexpr double kPs[] = {50, 80, 90, 99, 99.9, 100};
  const std::vector<double> p = percentiles_of(latency_ms, kPs);
  j["latency_ms"] = {{"mean", number(mean)}, {"p50", number(p[0])},  {"p80", number(p[1])},
                     {"p90", number(p[2])},  {"p99", number(p[3])},  {"p999", number(p[4])},
                     {"max", number(p[5])}};
  if (slo || s.with_slo > 0) {
    // Attainment over the requests with an SLO: a timed-out or failed one missed it.
    if (s.with_slo > 0 && s.slo_min == s.slo_max) j["slo_ms"] = s.slo_min * 1e3;
    else if (s.with_slo == 0) j["slo_ms"] = *slo * 1e3;
    j["slo_attainment"] = number(s.with_slo == 0 ? kNaN : double(s.within_slo) / s.with_slo);
    j["overdue"] = s.with_slo - s.within_slo;
  }
  if (s.accuracy_known > 0) {  // runs with model groups only: others keep their bytes
    j["accuracy"] = s.accuracy_sum / double(s.accuracy_known);
    j["accuracy_requests"] = s.accuracy_known;
  }
  return j;
}

// The run's backup fields, over every request (warm-up included, as the run's counters).
struct BackupTally {
  uint64_t requests = 0, sent = 0, won_by_backup = 0, cancelled = 0, wasted = 0;
  double wasted_seconds = 0;  // summed in id order

  void add(const RequestRecord& r) {
    ++requests;
    if (!r.backup_sent) return;
    ++sent;
    won_by_backup += r.won_by == RequestRecord::Copy::Backup;
    cancelled += r.copy_cancelled;
    wasted += r.wasted > 0;
    wasted_seconds += r.wasted;
  }
  nlohmann::json summary() const {
    return {{"sent", sent},
            {"won_by_backup", won_by_backup},
            {"copies_cancelled", cancelled},
            {"copies_wasted", wasted},
            {"wasted_seconds", wasted_seconds},
            {"extra_load", number(requests == 0 ? kNaN : double(sent) / double(requests))}};
  }
};

nlohmann::json optimum_json(const CacheOptimum& o) {
  const double over = o.lower > 0 ? double(o.loads) / double(o.lower) : o.loads == 0 ? 1 : kNaN;
  return {{"tier", o.tier},
          {"accesses", o.accesses},
          {"loads", o.loads},
          {"optimum_lower", o.lower},
          {"optimum_upper", o.upper},
          {"loads_over_optimum", number(over)}};
}

}  // namespace

double percentile(std::vector<double> values, double p) {
  std::sort(values.begin(), values.end());
  return percentile_sorted(values, p);
}

// The whole run's numbers, and each model's; latencies are kept per model only (the whole
// run's percentiles select over all of them, or over the one model that has them all).
struct SummaryBuilder::State {
  explicit State(size_t latency_budget) : spill(latency_budget) {}
  SubsetStats whole;
  std::vector<SubsetStats> by_model;
  LatencySpill spill;                   // before the stores, which hold memory of its budget
  std::vector<LatencyStore> latencies;  // by_model's, in the same order
  uint64_t unknown_model = 0;  // records naming no model of the run: in the whole run only
  BackupTally backups;
  // One model, and every record so far its own: the whole run's subset would be model 0's,
  // fed the same records in the same order, so it is not fed at all (two adds a request cost
  // ~2% of a one-model simulation) and is copied from model 0 when it first differs (a record
  // of no model) or at summary().
  bool whole_is_model0 = false;

  void add_subset() {
    by_model.emplace_back();
    latencies.emplace_back(&spill);
  }
  void split_whole() {
    whole = by_model[0];
    whole_is_model0 = false;
  }
};

SummaryBuilder::SummaryBuilder(std::vector<std::string> model_names, std::optional<double> slo,
                               double warmup, size_t latency_budget)
    : names_(std::move(model_names)), slo_(slo), warmup_(warmup),
      state_(std::make_unique<State>(latency_budget)) {
  for (size_t m = 0; m < names_.size(); ++m) state_->add_subset();
  state_->whole_is_model0 = names_.size() == 1;
}

SummaryBuilder::~SummaryBuilder() = default;

void SummaryBuilder::expect(const std::vector<uint64_t>& requests) {
  State& st = *state_;
  for (size_t m = 0; m < requests.size() && m < names_.size(); ++m)
    st.latencies[m].reserve(requests[m]);
}

void SummaryBuilder::add(const RequestRecord& r) {
  State& st = *state_;
  // A record naming no model of the run counts in the whole run only (in a subset of its
  // own, which holds its latencies and has no per-model entry).
  const size_t m = std::min<size_t>(r.model, names_.size());
  if (m == st.by_model.size()) st.add_subset();
  st.backups.add(r);
  if (st.whole_is_model0) {
    if (m == 0) return st.by_model[0].add(r, warmup_, slo_, &st.latencies[0]);
    st.split_whole();
  }
  st.whole.add(r, warmup_, slo_, nullptr);
  st.by_model[m].add(r, warmup_, slo_, &st.latencies[m]);
}

nlohmann::json SummaryBuilder::summary(const RunRecords& counters) {
  State& st = *state_;
  if (st.whole_is_model0) st.split_whole();
  std::vector<const ValueChunks*> holders;  // the stores with latencies
  for (const LatencyStore& l : st.latencies)
    if (!l.empty()) holders.push_back(&l);
  const JoinedChunks all(holders);
  const nlohmann::json whole = subset_summary(
      st.whole, holders.size() == 1 ? *holders[0] : static_cast<const ValueChunks&>(all), slo_);
  nlohmann::json j = whole;
  j["loads"] = counters.loads;
  j["evictions"] = counters.evictions;
  j["hits"] = counters.hits;
  j["misses"] = counters.misses;
  j["mean_batch_size"] = number(counters.mean_batch_size);
  if (counters.backups) j["backups"] = st.backups.summary();
  if (counters.cache_optimum) j["cache_optimum"] = optimum_json(*counters.cache_optimum);
  if (warmup_ > 0) {
    j["warmup_s"] = warmup_;
    j["warmup_requests"] = st.whole.seen - st.whole.counted;
  }
  const bool one_model_has_all = names_.size() == 1 && st.by_model[0].seen == st.whole.seen;
  nlohmann::json per_model = nlohmann::json::object();
  for (size_t m = 0; m < names_.size(); ++m)
    per_model[names_[m]] =
        one_model_has_all ? whole : subset_summary(st.by_model[m], st.latencies[m], slo_);
  j["per_model"] = per_model;
  return j;
}

nlohmann::json summarize(const RunRecords& run) {
  SummaryBuilder b(run.model_names, run.slo, run.warmup);
  for (const RequestRecord& r : run.requests) b.add(r);
  return b.summary(run);
}

}  // namespace servelab::results
