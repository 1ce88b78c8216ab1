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
#include "engine/runtime/preprocess.h"
#include "engine/server/admin_auth.h"
#include "engine/server/http_server.h"
#include "cli/serve_option_checks.h"
#include "cli/serve_options.h"
#include "cli/serve_processes.h"
#include "engine/runtime/weight_store_imports.h"
#include <yaml-cpp/yaml.h>

#include "config/engine_yaml.h"
#include "config/profile_yaml.h"

namespace po = boost::program_options;

namespace servelab::cli {
namespace {

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
  const uint32_t idle_trim_ms = vm["idle-trim-ms"].as<uint32_t>();
  check_range<uint32_t>("idle-trim-ms", idle_trim_ms, 0, 86'400'000);
  so.idle_trim = std::chrono::milliseconds(idle_trim_ms);
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

// The code of the architectures already in the weight store, imported (and, where each
// replica sets its own intra-op threads, run at the check's batches) here for every replica
// to share (engine/runtime/weight_store_imports.h).
// A store that cannot be opened is left to the replicas, which refuse it as a server does.
void import_before_fork(const runtime::EngineOptions& eo) {
  runtime::ImportedArchitectures got;
  try {
    got = runtime::import_weight_store_architectures(eo.weight_store, eo.intra_op_threads > 0);
  } catch (const std::exception& e) {
    std::cerr << "servelab serve: nothing of the weight store shared ahead: " << e.what() << "\n";
    return;
  }
  for (const std::string& why : got.skipped)
    std::cerr << "servelab serve: weight store skeleton not shared ahead: " << why << "\n";
  if (got.skeletons > 0)
    std::cerr << "servelab serve: " << got.architectures << " architecture(s) of the "
              << got.skeletons << " skeleton(s) in the weight store imported, " << got.warmed
              << " warmed, for the replicas to share\n";
}

// In a replica: the parent's warm-up passes again, before it listens (weight_store_imports.h).
void rewarm_after_fork(const runtime::EngineOptions& eo, const Replica& r) {
  std::ostringstream line;
  line << "servelab serve: replica " << r.index << ": ";
  try {
    line << runtime::rewarm_imported_architectures(eo.weight_store) << " warm-up pass(es) run again\n";
  } catch (const std::exception& e) {  // its first requests pay instead
    line << "not warmed again: " << e.what() << "\n";
  }
  std::cerr << line.str();
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
  const auto prepare = [&] {
    runtime::warm_image_decoders();  // the replicas share the decoders' set-up
    if (!eo.weight_store.empty()) import_before_fork(eo);
  };
  return run_replicas(processes, stop_signals, prepare, [&](const Replica& r) {
    server::ServerOptions rso = so;
    runtime::EngineOptions reo = eo;
    rso.port = static_cast<uint16_t>(r.port(so.port));
    rso.store_dir = r.store_dir(so.store_dir);
    if (!reo.weight_store.empty()) {
      reo.weight_store_holder = weight_store_holder(rso.store_dir);
      rewarm_after_fork(reo, r);
    }
    const std::string suffix =
        " (replica " + std::to_string(r.index) + " of " + std::to_string(r.count) + ")";
    return serve_until_stopped(rso, reo, stop_signals, suffix);
  });
}

}  // namespace servelab::cli
