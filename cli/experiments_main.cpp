// `servelab run`, `servelab measure`, `servelab report`.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <sstream>

#include <boost/program_options.hpp>

#include "cli/slurm_run.h"
#include "cli/subcommands.h"
#include "config/profile_yaml.h"
#include "experiments/backends.h"
#include "calibration/profiler.h"
#include "experiments/runner.h"

namespace po = boost::program_options;
namespace ex = servelab::experiments;

namespace servelab::cli {
namespace {

// Parses argv; prints help and returns false for --help; throws po::error on bad options.
bool parse(int argc, char** argv, const po::options_description& opts,
           const po::positional_options_description& pos, po::variables_map& vm,
           const char* usage) {
  po::store(po::command_line_parser(argc, argv).options(opts).positional(pos).run(), vm);
  if (vm.count("help")) {
    std::cout << usage << "\n\n" << opts << "\n";
    return false;
  }
  po::notify(vm);
  return true;
}

// "1,2,4" or ranges "1-32" (each size from 1 to 32), mixed: "1-8,12,16". The profiler's
// (SERVELAB_EXP_PROFILER, absent without LibTorch).
[[maybe_unused]] std::vector<uint32_t> parse_sizes(const std::string& s) {
  std::vector<uint32_t> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) {
    size_t dash = item.find('-');
    int lo = std::stoi(item.substr(0, dash));
    int hi = dash == std::string::npos ? lo : std::stoi(item.substr(dash + 1));
    if (lo < 1 || hi < lo) throw std::invalid_argument("batch sizes must be positive");
    for (int v = lo; v <= hi; ++v) out.push_back(static_cast<uint32_t>(v));
  }
  return out;
}

}  // namespace

namespace {

po::options_description run_options() {
  po::options_description opts("servelab run options");
  opts.add_options()("help,h", "show this help")(
      "experiment", po::value<std::string>()->required(), "experiment YAML file")(
      "mode", po::value<std::string>(), "sim | real | both (default: the experiment's modes)")(
      "out", po::value<std::string>()->default_value(""),
      "results folder (default out/<name>-<time>)")(
      "url", po::value<std::string>()->default_value(""),
      "real mode: drive the server at this URL instead of starting one in-process")(
      "profile", po::value<std::string>()->default_value(""),
      "sim mode: cost profile for configs that name none (default: this machine's)")(
      "models-dir", po::value<std::string>()->default_value("models"), "TorchScript models")(
      "image", po::value<std::string>()->default_value(""),
      "real mode: request body, and the image a local profile's overheads are measured with "
      "(default: the first image of workload.images, else MODELS_DIR/images/gradient.jpg)")(
      "set", po::value<std::vector<std::string>>()->composing(),
      "path=value: change the config (or a sweep axis, with a list where the config or the "
      "key's default holds one value), e.g. "
      "--set workload.requests=200 --set workload.arrival.concurrency=[1,8,64]; "
      "repetitions=N and seeds=[...] change the experiment's own")(
      "calibrate",
      "measure this machine's profile of the experiment's models again first (the machine "
      "as it is now: load, threads, request image), then run")(
      "match-speed",
      "both modes: run each point's real run first and simulate it on the profile scaled to "
      "the speed the machine had during that run (from the engine's reported compute "
      "times); sim summaries keep the unscaled result too")(
      "calibrate-each",
      "both modes: before each real run, re-measure its models' batch and load costs in a "
      "short probe (~10 s) and simulate the run on the profile rescaled to the mean of the "
      "probes so far and the profile")(
      "report", "render the report when done (servelab report OUT)")(
      "fail-fast", "stop at the first failed run")("quiet,q", "no progress bar")(
      "slurm", "submit the runs as a Slurm job array and a merge job after them (needs --out)")(
      "slurm-args", po::value<std::string>(), "--slurm: extra sbatch options, e.g. "
      "'--partition=gpu --time=10'")(
      "resume", "--slurm: submit only the runs without a finished folder, then merge again")(
      "wait", "--slurm: return when the merge has run")(
      "runs-per-task", po::value<size_t>()->default_value(1),
      "--slurm: runs one after another in each array task, so that Slurm's start of a task "
      "is paid once per N runs (short runs on a busy scheduler)")(
      "task", po::value<size_t>(), "run only the plan's run number N (a Slurm array task)")(
      "merge", "run nothing: index the runs' folders in --out into results.db")(
      "verbose,v", "print what each body does");
  return opts;
}

// The experiment file with the command line's --set applied (and recorded).
ex::ExperimentSpec load_with_sets(const po::variables_map& vm) {
  ex::ExperimentSpec spec = ex::load_experiment(vm["experiment"].as<std::string>());
  if (vm.count("set"))
    for (const auto& s : vm["set"].as<std::vector<std::string>>()) {
      ex::apply_set(spec, s);
      spec.doc["command_line_set"].push_back(s);  // recorded in OUT/experiment.yaml
    }
  return spec;
}

ex::RunOptions run_options_of(const po::variables_map& vm) {
  ex::RunOptions ro;
  if (vm.count("mode")) {
    std::string m = vm["mode"].as<std::string>();
    if (m == "both") ro.modes = {"sim", "real"};
    else if (m == "sim" || m == "real") ro.modes = {m};
    else throw ex::ExperimentError("--mode must be sim, real or both, not '" + m + "'");
  }
  ro.out_dir = vm["out"].as<std::string>();
  ro.fail_fast = vm.count("fail-fast") > 0;
  ro.quiet = vm.count("quiet") > 0;
  ro.match_speed = vm.count("match-speed") > 0;
  ro.calibrate_each = vm.count("calibrate-each") > 0;
  if (vm.count("task")) ro.task = vm["task"].as<size_t>();
  ro.merge = vm.count("merge") > 0;
  if ((ro.task || ro.merge) && ro.out_dir.empty())
    throw ex::ExperimentError("--task and --merge need --out DIR");
  return ro;
}

// Builds both bodies (measuring the profile first with --calibrate) and runs the sweep.
ex::RunOutcome run_with_backends(const ex::ExperimentSpec& spec, const ex::RunOptions& ro,
                                 const po::variables_map& vm) {
  const bool verbose = vm.count("verbose") > 0;
  const std::string models_dir = vm["models-dir"].as<std::string>();
  const std::string base_dir = std::filesystem::absolute(spec.file).parent_path().string();
  const std::string profile = vm["profile"].as<std::string>();
  const std::string image = vm["image"].as<std::string>();
  if (vm.count("calibrate"))
    ex::ensure_profile(profile.empty() ? ex::local_profile_path() : profile,
                       ex::profile_models_of(spec.doc["models"]), models_dir, true,
                       ex::request_image_of(spec.doc, models_dir, image));
  auto sim = ex::make_sim_backend({profile, models_dir, base_dir, verbose, image});
  auto real = ex::make_real_backend(
      {vm["url"].as<std::string>(), models_dir, profile, base_dir, image, verbose});
  std::map<std::string, ex::Backend*> backends{{"sim", sim.get()}, {"real", real.get()}};
  return ex::run_experiment(spec, ro, backends);
}

int report_outcome(const ex::RunOutcome& out, bool render_report) {
  std::fprintf(stderr, "run: %zu runs, %zu failed; results in %s\n", out.runs, out.failed,
               out.out_dir.c_str());
  if (out.failed) std::fprintf(stderr, "run: first failure: %s\n", out.first_error.c_str());
  if (render_report && out.failed < out.runs) {
    std::string dir = out.out_dir;
    char* rargv[] = {const_cast<char*>("report"), dir.data(), nullptr};
    if (int rc = report_main(2, rargv); rc != 0) return rc;
  }
  return out.failed ? 1 : 0;
}

}  // namespace

int run_main(int argc, char** argv) {
  po::options_description opts = run_options();
  po::positional_options_description pos;
  pos.add("experiment", 1);
  po::variables_map vm;
  try {
    if (!parse(argc, argv, opts, pos, vm,
               "usage: servelab run EXPERIMENT.yaml [--mode sim|real|both] [--out DIR]"))
      return 0;
    const ex::ExperimentSpec spec = load_with_sets(vm);
    if (vm.count("slurm")) return submit_to_slurm(slurm_plan(vm), spec, run_options_of(vm));
    const ex::RunOutcome out = run_with_backends(spec, run_options_of(vm), vm);
    if (vm.count("task")) return out.failed ? 1 : 0;  // the merge reports
    return report_outcome(out, vm.count("report") > 0);
  } catch (const po::error& e) {
    std::fprintf(stderr, "servelab run: %s (see servelab run --help)\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "servelab run: %s\n", e.what());
    return 1;
  }
}

int measure_main(int argc, char** argv) {
#ifdef SERVELAB_EXP_PROFILER
  const ex::ProfileOptions defaults;
  auto shortest = [](double v) {  // a default as --help shows it (0.2, not 0.20000000000000001)
    char text[32];
    std::snprintf(text, sizeof text, "%g", v);
    return std::string(text);
  };
  po::options_description opts("servelab measure options");
  opts.add_options()("help,h", "show this help")(
      "model", po::value<std::vector<std::string>>()->multitoken(),
      "model names (default: squeezenet1_1 resnet18)")(
      "models-dir", po::value<std::string>()->default_value("models"), "TorchScript models")(
      "batch-sizes", po::value<std::string>()->default_value("1-32"),
      "comma list of sizes or ranges (1-8,16)")(
      "samples", po::value<uint32_t>()->default_value(defaults.batches.samples),
      "timed passes per batch size, at least (cheap sizes take more, up to 1 s of passes)")(
      "block-seconds",
      po::value<double>()->default_value(defaults.batches.block_seconds,
                                 shortest(defaults.batches.block_seconds)),
      "seconds of timed passes a size takes in each round (one pass at least)")(
      "rewarm-below-ms",
      po::value<double>()->default_value(defaults.batches.rewarm_below_seconds * 1e3,
                                         shortest(defaults.batches.rewarm_below_seconds * 1e3)),
      "a size whose pass is shorter is re-warmed by an untimed pass of its own size before "
      "its block; 0 with --block-seconds 0: one pass per size per round, each after another "
      "size (the order before blocks)")(
      "threads", po::value<int>()->default_value(1), "LibTorch intra-op threads")(
      "served-idle-turns", po::value<uint32_t>()->default_value(3),
      "turns (about 20 s each, then as long back to back) of one request in flight for the "
      "idle slowdown; 0: short blocks after sleeps instead (8 s)")(
      "source-loads", po::value<uint32_t>()->default_value(defaults.source_loads),
      "timed loads per model from each other source (its file read from the disk, a weight "
      "store's blobs resident and read from the disk, a sibling of its code loaded; at most "
      "100): the profile's "
      "load_sources_ms, for simulation.load_source; 0: none")(
      "served-miss-requests", po::value<uint32_t>()->default_value(48),
      "misses served one at a time (two copies of each model, room for one) for the served "
      "miss's load wait and first batch; 0: none")(
      "image", po::value<std::string>()->default_value(""),
      "request image for preprocessing and the overhead probe (default "
      "MODELS_DIR/images/gradient.jpg)")(
      "out", po::value<std::string>()->default_value(""),
      "profile file (default experiments/profiles/local/<hostname>.yaml)");
  po::positional_options_description pos;
  pos.add("model", -1);
  po::variables_map vm;
  try {
    if (!parse(argc, argv, opts, pos, vm, "usage: servelab measure [MODEL...] [--out FILE]"))
      return 0;
    ex::ProfileOptions o;
    o.models_dir = vm["models-dir"].as<std::string>();
    o.models = vm.count("model") ? vm["model"].as<std::vector<std::string>>()
                                 : std::vector<std::string>{"squeezenet1_1", "resnet18"};
    o.batch_sizes = parse_sizes(vm["batch-sizes"].as<std::string>());
    o.batches.samples = vm["samples"].as<uint32_t>();
    o.threads = vm["threads"].as<int>();
    o.batches.block_seconds = vm["block-seconds"].as<double>();
    o.batches.rewarm_below_seconds = vm["rewarm-below-ms"].as<double>() / 1e3;
    if (!(o.batches.block_seconds >= 0 && o.batches.block_seconds <= 60) ||
        !(o.batches.rewarm_below_seconds >= 0 && o.batches.rewarm_below_seconds <= 60)) {
      std::fprintf(stderr, "servelab measure: --block-seconds and --rewarm-below-ms must be "
                           "0 to 60 s (see servelab measure --help)\n");
      return 2;
    }
    o.served_idle_turns = vm["served-idle-turns"].as<uint32_t>();
    o.served_miss_requests = vm["served-miss-requests"].as<uint32_t>();
    o.source_loads = vm["source-loads"].as<uint32_t>();
    if (o.source_loads > 100) {
      std::fprintf(stderr, "servelab measure: --source-loads must be 0 to 100\n");
      return 2;
    }
    o.image = vm["image"].as<std::string>();
    std::string out = vm["out"].as<std::string>();
    if (out.empty()) out = ex::local_profile_path();
    ex::PhaseProgress progress = ex::profile_progress(o, "profile");
    config::ProfileFile measured = ex::measure_profile(
        o, [](const std::string& line) { std::fprintf(stderr, "profile: %s\n", line.c_str()); },
        [&](size_t phase) { progress.started(phase); });
    ex::save_profile(out, measured, o);
    std::printf("%s\n", out.c_str());
    return 0;
  } catch (const po::error& e) {
    std::fprintf(stderr, "servelab measure: %s (see servelab measure --help)\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "servelab measure: %s\n", e.what());
    return 1;
  }
#else
  std::fprintf(stderr, "servelab measure: this build has no LibTorch (SERVELAB_WITH_TORCH)\n");
  return 1;
#endif
}

int report_main(int argc, char** argv) {
  std::string script = std::string(SERVELAB_SOURCE_DIR) + "/reports/report.py";
  const char* python = "/usr/bin/python3";
  if (access(python, X_OK) != 0) {
    std::fprintf(stderr, "servelab report: %s not found (bash scripts/setup installs it)\n", python);
    return 1;
  }
  std::vector<char*> args{const_cast<char*>(python), script.data()};
  for (int i = 1; i < argc; ++i) args.push_back(argv[i]);
  args.push_back(nullptr);
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    execv(python, args.data());
    _exit(127);
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) < 0) return 1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

}  // namespace servelab::cli
