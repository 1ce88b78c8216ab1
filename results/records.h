// Per-request records and run summaries, in one format shared by the simulator, the load
// generator and the experiment runner: DIR/requests.csv and DIR/summary.json.
// Value types; functions are thread-compatible (no shared state).
#pragma once

#include <cstdio>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/control/types.h"
#include "results/latency_store.h"

namespace servelab::results {

// One request as measured by its producer (simulator, load generator). Times in seconds,
// relative to the run's start. `queued`/`dispatch`/`start` are NaN where the producer cannot
// see them (the load generator reads them from a ServeLab server's answer; other servers give
// only send and receive times).
struct RequestRecord {
  uint64_t id = 0;
  uint32_t model = 0;           // index into RunRecords::model_names
  double arrival = 0;           // sent / arrived
  double dispatch = 0;          // a worker took its batch (NaN if unknown or never)
  double start = 0;             // compute started (NaN if unknown)
  double finish = 0;            // response received / completed
  uint32_t batch_size = 0;      // 0 if unknown
  bool waited_for_load = false;
  RequestStatus status = RequestStatus::Ok;
  double queued = std::numeric_limits<double>::quiet_NaN();  // joined its model's queue
                                                            // on the server (its controller)
  // The expected accuracy of its answer (the simulator's model groups: the measured accuracy
  // of the members that voted, or a model's own; the load generator's labelled images: 1 for
  // a right answer, 0 for a wrong one); NaN when unknown. In requests.csv's optional last
  // column `accuracy`.
  double accuracy = std::numeric_limits<double>::quiet_NaN();
  // Its own latency objective in seconds (its deadline is arrival + slo): a per-model or
  // per-request SLO. NaN: the run's RunRecords::slo, if any. requests.csv writes the deadline.
  double slo = std::numeric_limits<double>::quiet_NaN();
  // Backup requests (the simulator's cluster.backup_after_s / backup_percentile): whether a
  // second copy was sent, which copy's answer the request got, whether the cancellation the
  // first dequeue sent found the other copy, and the server seconds a losing copy ran for
  // nothing. requests.csv has them only where the run had backups (RunRecords::backups).
  enum class Copy : uint8_t { None = 0, Primary = 1, Backup = 2 };
  bool backup_sent = false;
  Copy won_by = Copy::None;     // None: no backup, or no copy answered
  bool copy_cancelled = false;
  double wasted = 0;            // seconds
};

// How far the run's eviction policy was from the best any policy could do on the same
// accesses (results/offline_cache.h), in the executing tier, summed over the servers: the
// batches' models in the order they ran (runs of one model counted once), the loads the
// policy made into the tier, and the optimum's bounds on the fewest loads (equal when exact).
struct CacheOptimum {
  std::string tier;
  uint64_t accesses = 0, loads = 0, lower = 0, upper = 0;
};

struct RunRecords {
  std::vector<std::string> model_names;
  std::vector<RequestRecord> requests;
  std::optional<double> slo;    // seconds: the SLO of records without their own (enables
                                // slo_attainment and overdue, as records' own SLOs do)
  double warmup = 0;            // seconds: requests sent before it are left out of summaries
  uint64_t loads = 0, evictions = 0, hits = 0, misses = 0;  // when known (simulator, engine)
  double mean_batch_size = 0;   // over batches, when known
  bool backups = false;         // backups were on: the backup columns and summary "backups"
  std::optional<CacheOptimum> cache_optimum;  // where the executing tier is limited (both modes)
};

// summary.json: requests, completed, failed (by status), throughput_rps (completed divided by the
// span from first arrival to last finish), latency_ms {mean,p50,p80,p90,p99,p999,max} over
// completed requests, loads, evictions, hits, misses, slo_attainment and overdue (when an SLO is
// set: the run's, or requests' own), and "per_model" with the same fields per model name. A
// request's own SLO (RequestRecord::slo) wins over the run's; attainment is over the requests that
// had an SLO, and "slo_ms" is given where they all had the same one. With a warm-up (the run's
// steady state), request counts, latencies and SLO fields cover only the requests sent at or after
// it; throughput_rps stays the whole run's (answers come back in batch-sized lumps, and a window
// cut through them at an arbitrary time swings by a batch's worth); "warmup_s" and
// "warmup_requests" (how many were left out) say so. The run's counters (loads, evictions, hits,
// misses, mean_batch_size) cover the whole run; requests.csv keeps every request. "accuracy" (the
// whole run's and each model's or group's) is the mean expected accuracy of the completed requests
// whose accuracy is known, present only when some are (runs with model groups); "accuracy_requests"
// says how many that was. Where RunRecords::backups is set, "backups" sums the records' backup
// fields over the whole run: sent, won_by_backup, copies_cancelled, copies_wasted (losing
// copies that ran), wasted_seconds, and extra_load (copies sent per request). Where
// RunRecords::cache_optimum is set, "cache_optimum" gives its fields (tier, accesses, loads,
// optimum_lower, optimum_upper) and loads_over_optimum: loads / optimum_lower (1: the
// policy was optimal; where the bounds differ, the optimum lies between them).
nlohmann::json summarize(const RunRecords& run);

// Receives a run's records one at a time, in id order, each final: the streaming form of
// RunRecords::requests, so that a long run need not hold every record.
class RecordSink {
 public:
  virtual ~RecordSink() = default;
  virtual void add(const RequestRecord& r) = 0;
};

// summarize(), fed one record at a time: summary() gives what summarize() gives for a run of
// the records added (in id order), with `counters`' loads, evictions, hits, misses and
// mean_batch_size (its requests are ignored). Keeps every completed request's latency (the
// percentiles are exact): in memory up to `latency_budget` of them, past it in an unlinked
// temporary file (results/latency_store.h), so that its memory stays flat. summary() may be
// called once; it throws std::runtime_error when the temporary file fails.
class SummaryBuilder : public RecordSink {
 public:
  SummaryBuilder(std::vector<std::string> model_names, std::optional<double> slo, double warmup,
                 size_t latency_budget = LatencySpill::kDefaultBudget);
  ~SummaryBuilder() override;
  // At most `requests[m]` records of model m will come (the workload's count per model): their
  // latencies' storage is taken once, instead of grown as they arrive. Optional.
  void expect(const std::vector<uint64_t>& requests);
  void add(const RequestRecord& r) override;
  nlohmann::json summary(const RunRecords& counters);

 private:
  struct State;
  std::vector<std::string> names_;
  std::optional<double> slo_;
  double warmup_;
  std::unique_ptr<State> state_;
};

// requests.csv (the format of write_requests_csv), written as records are added: rows are
// formatted and written on a second thread, a chunk of records at a time, so memory stays
// flat and the caller does not wait for the disk. Throws std::runtime_error when the file
// cannot be opened, and from add() or close() after a write error.
class RequestsCsvStream : public RecordSink {
 public:
  // accuracy_column: each request's accuracy (runs with model groups or scored answers);
  // deadline_column: each request's deadline before it (runs with SLOs); backup_columns: the
  // backup columns last (runs with backups). See write_requests_csv.
  RequestsCsvStream(const std::string& path, std::vector<std::string> model_names,
                    bool accuracy_column = false, bool deadline_column = false,
                    bool backup_columns = false);
  ~RequestsCsvStream() override;  // closes; errors are lost: call close() to see them
  void add(const RequestRecord& r) override;
  void close();

 private:
  struct Writer;
  std::unique_ptr<Writer> writer_;
};

// Percentile with linear interpolation between closest ranks (numpy's default); p in [0,100].
double percentile(std::vector<double> values, double p);

// Writes requests.csv with header id,model,arrival,queued,dispatch,start,finish,batch_size,
// waited_for_load,status (model by name, status by name), then a column `deadline` (arrival +
// the record's own SLO) when some record has its own SLO, a column `accuracy` when some
// record's accuracy is known (empty where not), and where RunRecords::backups is set the
// columns backup_sent (0 or 1), won_by (primary, backup, or empty: no backup or no answer),
// copy_cancelled (0 or 1) and wasted_s. Throws std::runtime_error on I/O.
// The reader also takes files written before `queued` existed (it is then NaN).
void write_requests_csv(const std::string& path, const RunRecords& run);
RunRecords read_requests_csv(const std::string& path);
void write_json(const std::string& path, const nlohmann::json& j);

}  // namespace servelab::results
