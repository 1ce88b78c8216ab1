// `servelab serve`: the HTTP inference server. Options come from an optional YAML config
// (--config: its engine/policies sections) and the command line, which overrides it.
#include <pthread.h>
#include <signal.h>

#include <boost/program_options.hpp>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <new>
#include <sstream>
#include <string>
#include <vector>

#include "engine/store/digest.h"
#include "cli/subcommands.h"
#include "config/bounds.h"
#include "engine/runtime/allocator.h"
#include "engine/server/admin_auth.h"
#include "engine/server/http_server.h"
#include "cli/serve_option_checks.h"
#include "cli/serve_processes.h"
#include <yaml-cpp/yaml.h>

#include "config/engine_yaml.h"
#include "config/profile_yaml.h"

namespace po = boost::program_options;

namespace servelab::cli {
namespace {

// The per-model queue bound of `serve` when neither the command line nor the config file
// sets one: a server must not grow without limit under requests it cannot serve in time.
constexpr uint32_t kServeQueueBound = 1024;

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

// Applies `--param POLICY.KEY=VALUE` entries; throws std::invalid_argument on a bad one.
void apply_params(const std::vector<std::string>& params, ControllerConfig& c) {
  for (const auto& p : params) {
    size_t dot = p.find('.'), eq = p.find('=');
    if (dot == std::string::npos || eq == std::string::npos || eq < dot) {
      throw std::invalid_argument("--param '" + p + "': expected POLICY.KEY=VALUE");
    }
    std::string policy = p.substr(0, dot);
    PolicySpec* spec = policy == "batching"     ? &c.batching
                       : policy == "eviction"   ? &c.eviction
                       : policy == "scheduling" ? &c.scheduling
                                                : nullptr;
    if (!spec) {
      throw std::invalid_argument("--param '" + p + "': policy must be batching, eviction or "
                                  "scheduling");
    }
    spec->params.set(p.substr(dot + 1, eq - dot - 1), p.substr(eq + 1));
  }
}

// A policy's network file named in a config file is relative to that file (as in `run`).
void resolve_weights(PolicySpec& spec, const std::filesystem::path& config_dir) {
  if (!spec.params.has("weights")) return;
  const std::filesystem::path w = spec.params.get_string("weights", "");
  if (w.is_relative() && !w.empty()) spec.params.set("weights", (config_dir / w).string());
}

// This server's models are marked in the weight store under a name of its model store, the
// same after a restart: the blobs they hold are never deleted by another server.
std::string weight_store_holder(const std::string& store_dir) {
  const std::string store = std::filesystem::weakly_canonical(
      std::filesystem::absolute(store_dir)).string();
  return "store-" + store::Sha256::hex(store).substr(0, 16);
}

// Builds the engine options: config file first, then command-line overrides.
runtime::EngineOptions engine_options(const po::variables_map& vm) {
  check_engine_options(vm);
  runtime::EngineOptions e;
  bool config_queue_bound = false;
  if (vm.count("config")) {
    const std::string file = vm["config"].as<std::string>();
    const YAML::Node root = config::load_file(file);
    config::EngineSection s = config::parse_engine_section(root, file);
    e.control = s.control;
    resolve_weights(e.control.batching, std::filesystem::path(file).parent_path());
    e.default_contexts = s.contexts;
    e.slo = s.slo;
    e.private_weights = s.private_weights;
    const YAML::Node engine = root["engine"];
    config_queue_bound = engine && engine.IsMap() && engine["queue_bound"];
  }
  ControllerConfig& c = e.control;
  if (vm.count("workers")) c.workers = vm["workers"].as<uint32_t>();
  if (vm.count("contexts")) e.default_contexts = vm["contexts"].as<uint32_t>();
  if (vm.count("batching")) c.batching = PolicySpec{vm["batching"].as<std::string>(), {}};
  if (vm.count("eviction")) c.eviction = PolicySpec{vm["eviction"].as<std::string>(), {}};
  if (vm.count("scheduling")) c.scheduling = PolicySpec{vm["scheduling"].as<std::string>(), {}};
  if (vm.count("param")) apply_params(vm["param"].as<std::vector<std::string>>(), c);
  if (vm.count("quantum-ms")) c.quantum = vm["quantum-ms"].as<double>() / 1e3;
  if (vm.count("max-batch")) c.max_batch = vm["max-batch"].as<uint32_t>();
  auto& host = c.budgets[static_cast<int>(Tier::Host)];
  auto& device = c.budgets[static_cast<int>(Tier::Device)];
  if (vm.count("host-models")) host.models = vm["host-models"].as<uint32_t>();
  if (vm.count("host-bytes")) host.bytes = vm["host-bytes"].as<uint64_t>();
  if (vm.count("device-models")) device.models = vm["device-models"].as<uint32_t>();
  if (vm.count("device-bytes")) device.bytes = vm["device-bytes"].as<uint64_t>();
  if (vm.count("request-timeout-ms")) c.request_timeout = vm["request-timeout-ms"].as<double>() / 1e3;
  if (!vm["queue-bound"].defaulted() || !config_queue_bound)
    c.queue_bound = vm["queue-bound"].as<uint32_t>();
  e.executor = vm["executor"].as<std::string>();
  if (vm.count("profile"))
    e.cost_profile = std::make_shared<const CostProfile>(
        config::load_profile(vm["profile"].as<std::string>()));
  e.device = vm["device"].as<std::string>();
  e.intra_op_threads = vm["intra-op-threads"].as<int>();
  if (e.executor != "torch" && e.executor != "profiled") {
    throw ConfigError("--executor must be torch or profiled, got '" + e.executor + "'");
  }
  if (e.executor == "profiled" && !e.cost_profile) {
    throw ConfigError("--executor profiled needs --profile FILE");
  }
  e.max_image_bytes = vm["max-image-bytes"].as<size_t>();
  if (vm.count("weight-store")) {
    if (e.executor != "torch") throw ConfigError("--weight-store needs --executor torch");
    e.weight_store = vm["weight-store"].as<std::string>();
    if (e.weight_store.empty()) throw ConfigError("--weight-store needs a directory");
    e.weight_store_holder = weight_store_holder(vm["store"].as<std::string>());
  }
  return e;
}

// Builds the HTTP server's options from the command line; throws ConfigError.
server::ServerOptions server_options(const po::variables_map& vm) {
  server::ServerOptions so;
  so.bind = vm["bind"].as<std::string>();
  unsigned port = vm["port"].as<unsigned>();
  check_range<unsigned>("port", port, 0, 65535);
  so.port = static_cast<uint16_t>(port);
  so.io_threads = vm["io-threads"].as<unsigned>();
  check_range<unsigned>("io-threads", so.io_threads, config::kIoThreads.lo, config::kIoThreads.hi);
  so.max_body_bytes = vm["max-body-bytes"].as<size_t>();
  check_range<size_t>("max-body-bytes", so.max_body_bytes, 1024, size_t(4) << 30);
  so.max_json_body_bytes = vm["max-json-body-bytes"].as<size_t>();
  check_range<size_t>("max-json-body-bytes", so.max_json_body_bytes, 1024, size_t(4) << 30);
  so.store_dir = vm["store"].as<std::string>();
  so.quarantine_orphans = vm["quarantine-orphans"].as<bool>();
  so.default_top_k = vm["top-k"].as<int>();
  check_range<int>("top-k", so.default_top_k, 1, 100'000);
  so.v2_max_batch = vm["v2-max-batch"].as<uint32_t>();
  check_range<uint32_t>("v2-max-batch", so.v2_max_batch, 1, 4096);
  so.image_limits.max_bytes = vm["max-image-bytes"].as<size_t>();
  check_range<size_t>("max-image-bytes", so.image_limits.max_bytes, 64, size_t(1) << 30);
  so.image_limits.max_pixels = vm["max-image-pixels"].as<uint64_t>();
  check_range<uint64_t>("max-image-pixels", so.image_limits.max_pixels, 1, 500'000'000);
  so.image_limits.max_side = vm["max-image-side"].as<uint32_t>();
  check_range<uint32_t>("max-image-side", so.image_limits.max_side, 1, 65'535);
  so.image_limits.max_aspect = vm["max-image-aspect"].as<double>();
  check_range<double>("max-image-aspect", so.image_limits.max_aspect, 1, 100'000);
  if (vm.count("model-root")) {
    so.model_root = vm["model-root"].as<std::string>();
    std::error_code ec;
    if (!std::filesystem::is_directory(so.model_root, ec)) {
      throw ConfigError("--model-root '" + so.model_root + "' is not a directory");
    }
  }
  if (vm.count("admin-token-file")) {
    try {
      so.admin_token = server::read_admin_token_file(vm["admin-token-file"].as<std::string>());
    } catch (const std::runtime_error& e) {
      throw ConfigError(std::string("--admin-token-file: ") + e.what());
    }
  }
  return so;
}

// Runs one server until SIGINT or SIGTERM (blocked in `stop_signals`); its exit status.
// `suffix` follows its `listening on` line (which replica it is).
int serve_until_stopped(const server::ServerOptions& so, const runtime::EngineOptions& eo,
                        const sigset_t& stop_signals, const std::string& suffix) {
  try {
    server::HttpServer srv(so, eo);
    auto report = srv.start();
    std::printf("listening on %s:%u%s\n", so.bind.c_str(), unsigned(srv.port()), suffix.c_str());
    std::fflush(stdout);
    if (eo.executor == "torch") std::fprintf(stderr, "servelab serve: %s\n", runtime::keep_freed_memory());
    int sig = 0;
    sigwait(&stop_signals, &sig);
    std::fprintf(stderr, "servelab serve: %s received, shutting down\n",
                 sig == SIGINT ? "SIGINT" : "SIGTERM");
    srv.stop();
    (void)report;
  } catch (const std::bad_alloc&) {
    std::cerr << "servelab serve: out of memory while starting or running the server\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "servelab serve: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace

int serve_main(int argc, char** argv) {
  po::options_description desc = serve_options();
  po::variables_map vm;
  po::parsed_options parsed(&desc);
  try {
    parsed = po::parse_command_line(argc, argv, desc);
    po::store(parsed, vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::cerr << "servelab serve: " << e.what() << "\n(see servelab serve --help)\n";
    return 2;
  }
  if (vm.count("help")) {
    std::cout << desc << "\n";
    return 0;
  }
  server::ServerOptions so;
  runtime::EngineOptions eo;
  const unsigned processes = vm["processes"].as<unsigned>();
  try {
    refuse_negative_unsigned(parsed);
    so = server_options(vm);
    eo = engine_options(vm);
    check_range<unsigned>("processes", processes, 1, 64);
    if (so.port != 0 && so.port + processes - 1 > 65535)
      throw ConfigError("--processes " + std::to_string(processes) + " from --port " +
                        std::to_string(so.port) + " would need ports above 65535");
  } catch (const std::exception& e) {  // ConfigError, std::invalid_argument: bad options
    std::cerr << "servelab serve: " << e.what() << "\n(see servelab serve --help)\n";
    return 2;
  }

  // Block the stop signals before any thread starts, so that only sigwait() below sees them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  if (processes == 1) return serve_until_stopped(so, eo, stop_signals, "");
  return run_replicas(processes, stop_signals, [&](const Replica& r) {
    server::ServerOptions rso = so;
    runtime::EngineOptions reo = eo;
    rso.port = static_cast<uint16_t>(r.port(so.port));
    rso.store_dir = r.store_dir(so.store_dir);
    if (!reo.weight_store.empty()) reo.weight_store_holder = weight_store_holder(rso.store_dir);
    const std::string suffix =
        " (replica " + std::to_string(r.index) + " of " + std::to_string(r.count) + ")";
    return serve_until_stopped(rso, reo, stop_signals, suffix);
  });
}

}  // namespace servelab::cli
