// summarize() and percentile(): the numbers of summary.json (format in results/records.h).
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "common/huge_pages.h"
#include "results/records.h"

namespace servelab::results {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// NaN and infinities become JSON null (nlohmann would otherwise write invalid JSON).
nlohmann::json number(double v) {
  if (!std::isfinite(v)) return nullptr;
  return v;
}

// numpy's default ("linear"): rank p/100*(n-1), interpolated between the two closest ranks.
double percentile_sorted(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return kNaN;
  p = std::clamp(p, 0.0, 100.0);
  double rank = p / 100.0 * double(sorted.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(rank));
  size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - double(lo));
}

// Several percentiles of `values` (reordered) by selection instead of a full sort: the same
// numbers as percentile_sorted over the sorted values, in O(n) per distinct rank. `ps` ascending.
std::vector<double> percentiles_by_selection(std::vector<double>& values,
                                             const std::vector<double>& ps) {
  std::vector<double> out;
  if (values.empty()) return std::vector<double>(ps.size(), kNaN);
  const size_t n = values.size();
  size_t selected = 0;  // values[0, selected) hold the smallest, in order up to selected-1
  auto kth = [&](size_t k) {
    if (k >= selected) {
      std::nth_element(values.begin() + selected, values.begin() + k, values.end());
      selected = k + 1;
    }
    return values[k];
  };
  for (double p : ps) {
    double rank = std::clamp(p, 0.0, 100.0) / 100.0 * double(n - 1);
    size_t lo = static_cast<size_t>(std::floor(rank));
    size_t hi = std::min(lo + 1, n - 1);
    double a = kth(lo), b = kth(hi);
    out.push_back(a + (b - a) * (rank - double(lo)));
  }
  return out;
}

// The summary of one subset of requests (the whole run, or one model). Requests sent before
// `warmup` count only towards throughput, which stays the whole run's.
nlohmann::json summarize_subset(const std::vector<const RequestRecord*>& all, double warmup,
                                const std::optional<double>& slo) {
  uint64_t counted = 0, done = 0;
  double first_sent = std::numeric_limits<double>::infinity();
  double last_done = -std::numeric_limits<double>::infinity();
  std::vector<double> latency_ms;
  reserve_huge(latency_ms, all.size());
  std::map<std::string, uint64_t> failed;
  uint64_t within_slo = 0;
  for (const RequestRecord* r : all) {
    first_sent = std::min(first_sent, r->arrival);
    if (r->status == RequestStatus::Ok) {
      ++done;
      last_done = std::max(last_done, r->finish);
    }
    if (r->arrival < warmup) continue;
    ++counted;
    if (r->status != RequestStatus::Ok) {
      failed[status_name(r->status)]++;
      continue;
    }
    double lat = r->finish - r->arrival;
    latency_ms.push_back(lat * 1e3);
    if (slo && lat <= *slo) within_slo++;
  }
  nlohmann::json j;
  j["requests"] = counted;
  j["completed"] = latency_ms.size();
  nlohmann::json f = nlohmann::json::object();
  uint64_t failed_total = 0;
  for (const auto& [name, n] : failed) {
    f[name] = n;
    failed_total += n;
  }
  j["failed"] = failed_total;
  j["failed_by_status"] = f;
  // Completions over the run's span. Not over a window from the warm-up on: a batch's
  // answers come back together, and a window cut at an arbitrary time through those lumps
  // swings by a batch's worth (one 400-request run, 64-256 in flight: -10..-12% sim vs real
  // in the window, -1.8% over the run).
  const double span = last_done - first_sent;
  j["throughput_rps"] = number(done == 0 || span <= 0 ? kNaN : done / span);

  double mean = kNaN, max = kNaN;
  if (!latency_ms.empty()) {
    double sum = 0;
    for (double v : latency_ms) sum += v;
    mean = sum / latency_ms.size();
    max = *std::max_element(latency_ms.begin(), latency_ms.end());
  }
  const std::vector<double> p =
      percentiles_by_selection(latency_ms, {50, 80, 90, 99, 99.9});
  j["latency_ms"] = {{"mean", number(mean)}, {"p50", number(p[0])},  {"p80", number(p[1])},
                     {"p90", number(p[2])},  {"p99", number(p[3])},  {"p999", number(p[4])},
                     {"max", number(max)}};
  if (slo) {
    // Attainment over all requests: a timed-out or failed request missed its SLO.
    j["slo_ms"] = *slo * 1e3;
    j["slo_attainment"] = number(counted == 0 ? kNaN : double(within_slo) / counted);
    j["overdue"] = counted - within_slo;
  }
  return j;
}

}  // namespace

double percentile(std::vector<double> values, double p) {
  std::sort(values.begin(), values.end());
  return percentile_sorted(values, p);
}

namespace {

// Every request, and the requests of each model (left empty when one model holds them all:
// its summary is the run's).
struct Subsets {
  std::vector<const RequestRecord*> all;
  std::vector<std::vector<const RequestRecord*>> by_model;
  bool one_model_has_all = false;
};

Subsets split_by_model(const RunRecords& run) {
  Subsets s;
  std::vector<size_t> model_count(run.model_names.size(), 0);
  for (const RequestRecord& r : run.requests)
    if (r.model < model_count.size()) ++model_count[r.model];
  s.one_model_has_all = model_count.size() == 1 && model_count[0] == run.requests.size();
  reserve_huge(s.all, run.requests.size());
  for (const RequestRecord& r : run.requests) s.all.push_back(&r);
  s.by_model.resize(run.model_names.size());
  if (s.one_model_has_all) return s;
  for (size_t m = 0; m < s.by_model.size(); ++m) reserve_huge(s.by_model[m], model_count[m]);
  for (const RequestRecord& r : run.requests)
    if (r.model < s.by_model.size()) s.by_model[r.model].push_back(&r);
  return s;
}

}  // namespace

nlohmann::json summarize(const RunRecords& run) {
  const Subsets subsets = split_by_model(run);
  const nlohmann::json whole = summarize_subset(subsets.all, run.warmup, run.slo);
  nlohmann::json j = whole;
  j["loads"] = run.loads;
  j["evictions"] = run.evictions;
  j["hits"] = run.hits;
  j["misses"] = run.misses;
  j["mean_batch_size"] = number(run.mean_batch_size);
  if (run.warmup > 0) {
    j["warmup_s"] = run.warmup;
    j["warmup_requests"] = run.requests.size() - j["requests"].get<uint64_t>();
  }
  nlohmann::json per_model = nlohmann::json::object();
  for (size_t m = 0; m < run.model_names.size(); ++m) {
    per_model[run.model_names[m]] = subsets.one_model_has_all
                                        ? whole
                                        : summarize_subset(subsets.by_model[m], run.warmup, run.slo);
  }
  j["per_model"] = per_model;
  return j;
}

}  // namespace servelab::results
