#include "capacity/loadgen_summary.h"

#include <cinttypes>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <fstream>
#include <stdexcept>

namespace servelab::capacity {
namespace {

constexpr const char* kRule = "================================================\n";

std::string line(const char* format, ...) __attribute__((format(printf, 1, 2)));
std::string line(const char* format, ...) {
  char buf[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buf, sizeof buf, format, args);
  va_end(args);
  return std::string(buf) + "\n";
}

long long ns(double seconds) { return std::llround(seconds * 1e9); }

const char* yes_no(bool b) { return b ? "Yes" : "NO"; }

std::string metric_line(const ScenarioSettings& s, const RunOutcome& run) {
  switch (s.scenario) {
    case Scenario::kServer:
      return line("Scheduled samples per second : %.2f", run.scheduled_rate) +
             line("Completed samples per second    : %.2f", run.completed_rate);
    case Scenario::kOffline:
      return line("Samples per second: %.2f", run.completed_rate);
    case Scenario::kSingleStream:
    case Scenario::kMultiStream:
      return line("%.1fth percentile latency (ns) : %lld", s.target_percentile * 100,
                  ns(run.percentile_latency_s));
  }
  return "";
}

std::string validity(const ScenarioSettings& s, const RunOutcome& run) {
  std::string out = line("Result is : %s", run.valid() ? "VALID" : "INVALID");
  if (s.scenario == Scenario::kServer)
    out += line("  Performance constraints satisfied : %s", yes_no(run.performance_ok));
  out += line("  Min duration satisfied : %s", yes_no(run.min_duration_ok));
  out += line("  Min queries satisfied : %s", yes_no(run.min_queries_ok));
  if (s.scenario != Scenario::kOffline)
    out += line("  Early stopping satisfied: %s", yes_no(run.early_stopping_ok));
  for (const auto& reason : run.reasons()) out += "  Reason: " + reason + "\n";
  return out;
}

std::string stats(const RunOutcome& run) {
  std::string out = line("Min latency (ns)                : %lld", ns(run.min_latency_s)) +
                    line("Max latency (ns)                : %lld", ns(run.max_latency_s)) +
                    line("Mean latency (ns)               : %lld", ns(run.mean_latency_s));
  for (const auto& [q, v] : run.percentiles)
    out += line("%.4gth percentile latency (ns) : %lld", q * 100, ns(v));
  return out;
}

std::string settings(const ScenarioSettings& s) {
  return line("scenario : %s", scenario_title(s.scenario).c_str()) +
         line("target_latency (ns): %lld", ns(s.target_latency_s)) +
         line("target_latency_percentile : %g", s.target_percentile) +
         (s.scenario == Scenario::kMultiStream
              ? line("samples_per_query : %u", unsigned(s.samples_per_query))
              : std::string()) +
         line("min_duration (ms): %lld", std::llround(s.min_duration_s * 1e3)) +
         line("min_query_count : %" PRIu64, s.min_query_count) +
         line("early_stopping_confidence : %g", s.early_stopping_confidence);
}

std::string header(const ScenarioSettings& s, const std::string& sut) {
  return std::string(kRule) + "MLPerf Results Summary\n" + kRule +
         line("SUT name : %s", sut.c_str()) +
         line("Scenario : %s", scenario_title(s.scenario).c_str()) +
         "Mode     : PerformanceOnly\n";
}

std::string block(const char* title) { return std::string("\n") + kRule + title + "\n" + kRule; }

}  // namespace

std::string loadgen_summary(const ScenarioSettings& s, const RunOutcome& run,
                            const std::string& sut) {
  return header(s, sut) + metric_line(s, run) + validity(s, run) + block("Additional Stats") +
         line("Completed queries : %" PRIu64, run.queries) +
         line("Duration (s) : %.3f", run.duration_s) + stats(run) + block("Test Parameters Used") +
         settings(s);
}

std::string loadgen_search_summary(const ScenarioSettings& s, const SearchResult& search,
                                   const std::string& sut) {
  const bool found = search.best_rate > 0;
  const RunOutcome& shown =
      found ? search.best : (search.steps.empty() ? RunOutcome{} : search.steps.back().outcome);
  std::string out = loadgen_summary(s, shown, sut);
  out += block("Server search (ServeLab)");
  out += line("Highest valid scheduled rate : %.2f", search.best_rate);
  out += line("Lowest invalid scheduled rate : %.2f", search.lowest_invalid);
  out += line("Trials : %zu, queries in all : %" PRIu64, search.steps.size(), search.queries);
  for (const auto& step : search.steps)
    out += line("  rate %.3f: %s, p%g %.3f ms, %" PRIu64 " of %" PRIu64 " over the target",
                step.rate, step.outcome.valid() ? "VALID" : "INVALID",
                s.target_percentile * 100, step.outcome.percentile_latency_s * 1e3,
                step.outcome.overlatency, step.outcome.queries);
  return out;
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path);
}

}  // namespace servelab::capacity
