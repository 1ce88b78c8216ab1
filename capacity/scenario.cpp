#include "capacity/scenario.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>
#include <stdexcept>

#include "capacity/early_stopping.h"

namespace servelab::capacity {
namespace {

struct ScenarioName {
  Scenario scenario;
  const char* name;
  const char* title;
};
constexpr ScenarioName kNames[] = {{Scenario::kSingleStream, "single-stream", "SingleStream"},
                                   {Scenario::kMultiStream, "multi-stream", "MultiStream"},
                                   {Scenario::kServer, "server", "Server"},
                                   {Scenario::kOffline, "offline", "Offline"}};

// The value at quantile q of sorted values (nearest rank, as LoadGen reports).
double at_quantile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  const auto rank = static_cast<size_t>(std::ceil(q * static_cast<double>(sorted.size())));
  return sorted[std::min(sorted.size(), std::max<size_t>(rank, 1)) - 1];
}

// Single- and multi-stream (LoadGen's early stopping estimate): a percentile needs the queries
// with which none over it would pass at the confidence; fewer cannot estimate it.
void judge_percentile_count(const ScenarioSettings& s, RunOutcome& o) {
  o.target_percentile = s.target_percentile;
  o.percentile_queries_needed =
      queries_needed(0, s.target_percentile, s.early_stopping_confidence);
  o.early_stopping_ok = o.queries >= o.percentile_queries_needed;
  if (!o.early_stopping_ok) o.more_queries_needed = o.percentile_queries_needed - o.queries;
}

void fail(const std::string& what) { throw std::invalid_argument("scenario: " + what); }

}  // namespace

Scenario parse_scenario(const std::string& name) {
  for (const auto& n : kNames)
    if (name == n.name) return n.scenario;
  fail("unknown scenario '" + name + "' (single-stream, multi-stream, server, offline)");
  return Scenario::kServer;
}

std::string scenario_name(Scenario s) {
  for (const auto& n : kNames)
    if (n.scenario == s) return n.name;
  return "?";
}

std::string scenario_title(Scenario s) {
  for (const auto& n : kNames)
    if (n.scenario == s) return n.title;
  return "?";
}

ScenarioSettings default_settings(Scenario s) {
  ScenarioSettings out;
  out.scenario = s;
  if (s == Scenario::kSingleStream) out.target_percentile = 0.90;
  return out;
}

void validate(const ScenarioSettings& s) {
  if (!(s.target_latency_s > 0 && s.target_latency_s <= 3600))
    fail("target latency must be above 0 and at most an hour");
  if (!(s.target_percentile > 0.5 && s.target_percentile < 1))
    fail("target latency percentile must be above 0.5 and below 1 (e.g. 0.99)");
  if (s.min_query_count == 0 || s.min_query_count > 100'000'000)
    fail("min query count must be 1..1e8");
  if (!(s.min_duration_s >= 0 && s.min_duration_s <= 86400))
    fail("min duration must be 0..86400 s");
  if (!(s.early_stopping_confidence >= 0 && s.early_stopping_confidence < 1))
    fail("early stopping confidence must be in [0, 1)");
  if (!(s.start_rate > 0 && s.start_rate <= 1e7)) fail("start rate must be in (0, 1e7] req/s");
  if (!(s.search_precision > 0 && s.search_precision <= 1))
    fail("search precision must be in (0, 1]");
  if (s.max_trials < 1 || s.max_trials > 1000) fail("max trials must be 1..1000");
  if (s.samples_per_query < 1 || s.samples_per_query > 65536)
    fail("samples per query must be 1..65536");
  if (!(s.min_rate > 0 && s.min_rate <= s.start_rate))
    fail("min rate must be above 0 and at most the start rate");
}

std::vector<double> query_latencies(const ScenarioSettings& s, std::vector<Sample> samples) {
  const uint64_t per_query =
      s.scenario == Scenario::kMultiStream ? s.samples_per_query : uint64_t{1};
  std::sort(samples.begin(), samples.end(),
            [](const Sample& a, const Sample& b) { return a.index < b.index; });
  std::vector<double> latencies;
  for (size_t first = 0; first < samples.size(); first += per_query) {
    const size_t end = std::min<size_t>(samples.size(), first + per_query);
    double sent = std::numeric_limits<double>::infinity(), answered = 0;
    bool ok = end - first == per_query;  // a query cut short never answered whole
    for (size_t i = first; i < end; ++i) {
      sent = std::min(sent, samples[i].sent);
      answered = std::max(answered, samples[i].answered);
      ok = ok && samples[i].ok;
    }
    latencies.push_back(ok ? answered - sent : std::numeric_limits<double>::infinity());
  }
  return latencies;
}

RunOutcome judge_run(const ScenarioSettings& s, std::vector<double> latencies,
                     double duration_s, double scheduled_rate) {
  RunOutcome o;
  std::sort(latencies.begin(), latencies.end());
  o.queries = latencies.size();
  o.duration_s = duration_s;
  o.scheduled_rate = scheduled_rate;
  o.completed_rate = duration_s > 0 ? static_cast<double>(o.queries) / duration_s : 0;
  o.percentile_latency_s = at_quantile(latencies, s.target_percentile);
  for (double q : {0.50, 0.90, 0.95, 0.97, 0.99, 0.999})
    o.percentiles.emplace_back(q, at_quantile(latencies, q));
  if (!latencies.empty()) {
    o.min_latency_s = latencies.front();
    o.max_latency_s = latencies.back();
    o.mean_latency_s = std::accumulate(latencies.begin(), latencies.end(), 0.0) /
                       static_cast<double>(latencies.size());
  }
  o.min_duration_ok = duration_s >= s.min_duration_s;
  o.min_queries_ok = o.queries >= s.min_query_count;
  if (s.scenario == Scenario::kServer) {
    o.overlatency = static_cast<uint64_t>(
        latencies.end() - std::upper_bound(latencies.begin(), latencies.end(), s.target_latency_s));
    o.performance_ok = o.queries > 0 && o.percentile_latency_s <= s.target_latency_s;
    o.early_stopping_ok = early_stopping_passes(o.queries, o.overlatency, s.target_percentile,
                                                s.early_stopping_confidence);
    if (!o.early_stopping_ok) {
      const uint64_t needed =
          queries_needed(o.overlatency, s.target_percentile, s.early_stopping_confidence);
      o.more_queries_needed = needed > o.queries ? needed - o.queries : 0;
    }
  } else if (s.scenario != Scenario::kOffline) {
    judge_percentile_count(s, o);
  }
  return o;
}

std::vector<std::string> RunOutcome::reasons() const {
  std::vector<std::string> out;
  if (!min_duration_ok) out.push_back("the run was shorter than the min duration");
  if (!min_queries_ok) out.push_back("fewer queries than the min query count");
  if (!performance_ok) out.push_back("the latency percentile is over the target latency");
  if (!early_stopping_ok && percentile_queries_needed > 0) {
    char text[160];
    std::snprintf(text, sizeof text,
                  "not enough queries processed for a %gth percentile early stopping estimate "
                  "(would need at least %llu in all)",
                  target_percentile * 100,
                  static_cast<unsigned long long>(percentile_queries_needed));
    out.push_back(text);
  } else if (!early_stopping_ok)
    out.push_back("early stopping: too many queries over the target latency for the "
                  "confidence (" + std::to_string(more_queries_needed) +
                  " more under it would be needed)");
  return out;
}

uint64_t queries_for(const ScenarioSettings& s) {
  uint64_t n = s.min_query_count;
  if (s.scenario == Scenario::kServer)
    n = std::max(n, queries_needed(0, s.target_percentile, s.early_stopping_confidence));
  return n;
}

double schedule_seconds(const ScenarioSettings& s, double rate) {
  // As LoadGen issues queries until both minimums hold: the longer of the two, and a few gaps
  // more so that Poisson's spread cannot leave the run short of either.
  const double by_count = 1.05 * static_cast<double>(queries_for(s)) / rate;
  return std::max(s.min_duration_s, by_count) + 10.0 / rate;
}

}  // namespace servelab::capacity
