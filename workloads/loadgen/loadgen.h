// The HTTP load generator: replays a generated workload against a running ServeLab server
// (`POST {url}/classify/{model}` with a fixed body) and returns one record per request in the
// shared results format (results/records.h). Used by `servelab load` and, in-process, by the
// experiment runner.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "results/records.h"
#include "workloads/workload.h"

namespace servelab::loadgen {

// One image of a labelled set (see read_labelled_images): what is sent and the label a
// right answer names.
struct LabelledBody {
  std::string file;          // its file name, for messages
  std::string body;          // the encoded image
  std::string content_type;  // image/png or image/jpeg, from the file name
  std::string label;         // the true label, as the models' labels files spell it
};

// Where and what to send. Plain value; copy freely.
struct LoadOptions {
  std::string url;                       // http://host[:port][/prefix]; https is not supported
  std::vector<std::string> model_names;  // model index of the workload -> name in the URL
  std::string body;                      // request body (image bytes), shared by all requests
  std::string content_type = "application/octet-stream";
  // Non-empty: request i sends labelled[i % size] instead of `body` (the same image for the
  // same request index in every run), and a 200 answer is scored: the record's accuracy is
  // 1 when the answer's label (a group's vote, or a model's top-1) is the image's label,
  // 0 otherwise, so a summary's "accuracy" is the fraction answered right.
  std::vector<LabelledBody> labelled;
  double timeout = 30;                   // seconds per request (connect + send + receive)
  uint32_t max_connections = 1024;       // open loop: at most this many sockets at once
  std::optional<double> slo;             // seconds; copied into RunRecords::slo
  // Per model (as model_names; a missing or empty entry: `slo`): its requests' SLO in
  // seconds, which each record carries (RequestRecord::slo). With send_slo every request
  // carries its SLO in X-SLO-Ms (the server's per-request SLO, which wins over the model's);
  // without, the server is expected to hold the same SLOs (registration, engine default).
  std::vector<std::optional<double>> model_slo;
  bool send_slo = false;
  std::optional<double> slo_of(uint32_t model) const {
    return model < model_slo.size() && model_slo[model] ? model_slo[model] : slo;
  }
  // Closed loop: open every client's connection before the clock starts, so that TCP set-up
  // and the server's accepts are not part of the first requests (a server that serves
  // clients already connected, as in steady state).
  bool preconnect = true;
  // Runs on the generator's thread right before the clock starts (after pre-connecting),
  // e.g. to line the start up with the server's quantum ticks. May be empty.
  std::function<void()> before_start;
};

// What the generator itself observed, beyond the per-request records.
struct LoadStats {
  double send_lag_mean = 0;      // open loop: mean of (actual send - scheduled send), seconds
  double send_lag_max = 0;       // open loop: worst lag (grows when max_connections binds)
  uint64_t connections = 0;      // TCP connections opened (keep-alive reuse keeps it low)
  uint64_t retries = 0;          // requests resent once because an idle keep-alive socket died
  double client_cpu_s = 0;       // CPU time of the generator's thread (its own cost)
  std::string first_error;       // first transport error message, empty if none
  // Through servelab route with backups: each request's X-Servelab-Route-Seq, the number its
  // copies' row has there (route::CopyRows), -1 for a request answered without one; empty
  // when no answer had one.
  std::vector<int64_t> route_seq;
};

// Sends every request of `workload` and waits for all responses (or their timeouts); blocks
// the calling thread, running its own single-threaded Asio loop. Times in the records are
// seconds from the start of the run: `arrival` is when the request was sent, `finish` when
// the response (or the error) came back. Where the server's answer carries its time split
// (a ServeLab server does), batch_size, queued, dispatch and start come from it (see
// apply_server_timing); otherwise they are NaN and batch_size 0.
// Closed loop: `concurrency` keep-alive connections (opened before the clock starts unless
// preconnect is off) each send, wait for the response, wait the think time, and send the
// next request. Open loop: each request is sent at its scheduled
// time on an idle keep-alive connection or a new one, without waiting for earlier responses.
// Status: HTTP 200 Ok, 503 Rejected, 504 Timeout, other codes Failed; a client-side timeout
// is Timeout, a transport error (refused, reset) Failed. With options.labelled, each answered
// request's accuracy is scored (LoadOptions::labelled); otherwise it stays NaN. Throws
// std::invalid_argument on a bad
// URL, an unresolvable host, or a model index without a name. Safe to call from several
// threads at once (no shared state).
results::RunRecords run_load(const LoadOptions& options, const workloads::Workload& workload,
                             LoadStats* stats = nullptr);

// Fills `r`'s server-side fields from a ServeLab classify answer (JSON with batch_size,
// load_ms and compute_ms, and queue_ms): batch_size; start = finish - compute; dispatch =
// start - load; queued = dispatch - queue (when the answer has queue_ms); waited_for_load =
// load > 0. The server reports durations, so they are placed back from the
// client's receive time `r.finish`: the response's transfer (tens of microseconds on
// loopback) counts as compute. Returns false and leaves `r` as it was when the body lacks
// them (another server, an error answer, not JSON).
bool apply_server_timing(const std::string& body, results::RequestRecord& r);

// Reads a labelled image set: DIR/labels.txt, one `FILE LABEL` line per image (FILE a name
// in DIR, .png or .jpg/.jpeg; blank lines and lines starting with '#' skipped), in file order.
// Throws std::invalid_argument naming the file and line: missing labels file or image, a
// malformed line, another image format, no images.
std::vector<LabelledBody> read_labelled_images(const std::string& dir);

// The label a ServeLab classify answer names: a group's "label" (its vote), else the first
// of a model's "top"; nullopt when the body has neither (an error answer, not JSON).
std::optional<std::string> answer_label(const std::string& body);

// The parts of an http:// URL. Throws std::invalid_argument with the URL in the message.
struct Url {
  std::string host;
  std::string port = "80";
  std::string prefix;  // path without a trailing '/', "" for the root
};
Url parse_url(const std::string& url);

}  // namespace servelab::loadgen
