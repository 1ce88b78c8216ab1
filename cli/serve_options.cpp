// The command-line options of `servelab serve` and their help (serve_main.cpp reads them).
#include "cli/serve_options.h"

#include <cstdint>
#include <string>
#include <vector>

namespace servelab::cli {

namespace po = boost::program_options;

namespace {

// The per-model queue bound of `serve` when neither the command line nor the config file
// sets one: a server must not grow without limit under requests it cannot serve in time.
constexpr uint32_t kServeQueueBound = 1024;

}  // namespace

po::options_description serve_options() {
  po::options_description d("servelab serve [options]\n\nServes the REST API (POST /register, "
                            "POST /classify/{name}, GET|DELETE /models[/{name}], POST|GET /groups, "
                            "GET|DELETE /groups/{name}, GET /health, GET /metrics)\non 127.0.0.1 by default. Command-line options override "
                            "the config file. Options");
  // clang-format off
  d.add_options()
    ("help,h", "print this help and exit")
    ("config", po::value<std::string>(), "YAML config; its `engine:` and `policies:` sections set "
                                         "the engine (docs/config.md)")
    ("bind", po::value<std::string>()->default_value("127.0.0.1"), "listen address")
    ("port", po::value<unsigned>()->default_value(8080), "listen port; 0 picks a free one. The "
                                  "bound address is printed as `listening on ADDR:PORT`")
    ("processes", po::value<unsigned>()->default_value(1), "N servers forked after the runtime's "
                                  "start-up, which they then share (its memory is held once): "
                                  "replica k listens on PORT + k (each its own free port for "
                                  "port 0) and keeps its models and registry in STORE/replica-k; "
                                  "a --weight-store is shared. The first process only "
                                  "supervises: SIGINT or SIGTERM to it stops them all")
    ("io-threads", po::value<unsigned>()->default_value(2), "HTTP IO threads (they also decode "
                                                            "images)")
    ("max-body-bytes", po::value<size_t>()->default_value(256u << 20), "larger request bodies are "
                                                                      "answered 413")
    ("max-json-body-bytes", po::value<size_t>()->default_value(16u << 20), "larger JSON of a "
                                     "KServe v2 infer request (the body, or the JSON header "
                                     "of binary tensors) is answered 413 before it is read; "
                                     "send large tensors as binary data")
    ("idle-trim-ms", po::value<uint32_t>()->default_value(10000), "give freed heap memory "
                                     "(the forward passes' buffers, kept between batches) "
                                     "back to the system once no request has been in flight "
                                     "this long; 0: keep it")
    ("store", po::value<std::string>()->default_value("model-store"), "model store directory: "
                                            "model files and the registry (registry.sqlite). "
                                            "One server at a time: a second one on the same "
                                            "store refuses to start")
    ("quarantine-orphans", po::bool_switch(), "start even when the registry has no models but "
                                     "the store holds model files (*.pt): move them to "
                                     "STORE/quarantine/<UTC time>/. Without it that start is "
                                     "refused. Files without a row beside a non-empty "
                                     "registry are always moved there, never deleted")
    ("weight-store", po::value<std::string>(), "keep models' large tensors once, in DIR "
                                     "(content-addressed blobs mapped read-only): variants "
                                     "that share tensors, and servers on one machine that "
                                     "name the same DIR, hold them in memory once, and a "
                                     "model registered again loads without deserializing "
                                     "its weights. Without it each model is its TorchScript "
                                     "file, loaded whole")
    ("top-k", po::value<int>()->default_value(5), "labels returned when ?top_k= is absent")
    ("v2-max-batch", po::value<uint32_t>()->default_value(64), "largest batch (first input "
                                     "dimension) of a KServe v2 infer request; larger: 413")
    ("model-root", po::value<std::string>(), "JSON registration may name server-side files, "
                                     "but only regular files under DIR (symlinks resolved). "
                                     "Without it, models must be uploaded")
    ("admin-token-file", po::value<std::string>(), "file holding a token; POST /register, "
                                     "DELETE /models/{name}, POST /groups and DELETE "
                                     "/groups/{name} then need `Authorization: Bearer "
                                     "<token>` (reads and classify stay open)")
    ("max-image-bytes", po::value<size_t>()->default_value(16u << 20), "larger classify bodies "
                                                                      "are answered 413")
    ("max-image-pixels", po::value<uint64_t>()->default_value(40'000'000), "width x height "
                                     "limit, read from the PNG/JPEG header before decoding")
    ("max-image-side", po::value<uint32_t>()->default_value(12'000), "width and height limit")
    ("max-image-aspect", po::value<double>()->default_value(20), "longer side / shorter side "
                                     "limit (a thin image is upscaled by the resize)")
    ("workers", po::value<uint32_t>(), "k workers: batches running at once (default 1)")
    ("contexts", po::value<uint32_t>(), "default context pool size per model (default 1)")
    ("batching", po::value<std::string>(), "batching policy name (default none)")
    ("eviction", po::value<std::string>(), "eviction policy name (default lru)")
    ("scheduling", po::value<std::string>(), "scheduling policy name (default oldest-first)")
    ("param", po::value<std::vector<std::string>>()->composing(),
        "policy parameter POLICY.KEY=VALUE with POLICY batching|eviction|scheduling "
        "(repeatable), e.g. batching.alpha=0.5")
    ("quantum-ms", po::value<double>(), "batching quantum in ms; > 0 runs Rafiqi's daemon "
                                        "(default 0: decide on every event)")
    ("max-batch", po::value<uint32_t>(), "per-model batch cap (default 128)")
    ("host-models", po::value<uint32_t>(), "models resident in host memory at once (default "
                                           "unlimited)")
    ("host-bytes", po::value<uint64_t>(), "bytes of models resident in host memory (default "
                                          "unlimited)")
    ("device-models", po::value<uint32_t>(), "models resident on the GPU at once")
    ("device-bytes", po::value<uint64_t>(), "bytes of models resident on the GPU")
    ("request-timeout-ms", po::value<double>(), "a request still queued this long is answered "
                                                "504 (default: never)")
    ("queue-bound", po::value<uint32_t>()->default_value(kServeQueueBound), "per-model queue "
                                     "bound in requests (a v2 batch of N is N); a full queue "
                                     "answers 503. 0: unbounded. The config file's "
                                     "engine.queue_bound applies when this is not given")
    ("executor", po::value<std::string>()->default_value("torch"), "torch | profiled")
    ("profile", po::value<std::string>(), "cost profile YAML: the costs of --executor profiled; with torch, the batch-cost priors of SLO-aware batching and group dispatchers")
    ("device", po::value<std::string>()->default_value("auto"), "auto | cpu | cuda")
    ("intra-op-threads", po::value<int>()->default_value(1), "LibTorch intra-op threads per "
                                                             "worker");
  // clang-format on
  return d;
}

}  // namespace servelab::cli
