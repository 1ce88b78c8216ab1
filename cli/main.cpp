// `servelab <command> [options]`: one command line, one subcommand per body of ServeLab.
// Built twice (cli/CMakeLists.txt): the lean `servelab` runs the commands it links and hands
// the others to `servelab-engine` beside it (same arguments, same process via exec).
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <new>
#include <string>

#include "cli/subcommands.h"
#include "learn/rafiki_rl.h"

namespace {

struct Command {
  const char* name;
  const char* help;
  int (*main)(int, char**);  // nullptr: run by the engine binary
};

#ifdef SERVELAB_HAS_SIMULATOR
#define SERVELAB_SIMULATE servelab::cli::simulate_main
#else
#define SERVELAB_SIMULATE nullptr
#endif
#ifdef SERVELAB_HAS_LOADGEN
#define SERVELAB_LOAD servelab::cli::load_main
#else
#define SERVELAB_LOAD nullptr
#endif
#ifdef SERVELAB_HAS_ROUTE
#define SERVELAB_ROUTE servelab::cli::route_main
#else
#define SERVELAB_ROUTE nullptr
#endif
#ifdef SERVELAB_HAS_SERVER
#define SERVELAB_SERVE servelab::cli::serve_main
#else
#define SERVELAB_SERVE nullptr
#endif
#ifdef SERVELAB_HAS_EXPERIMENTS
#define SERVELAB_MEASURE servelab::cli::measure_main
#define SERVELAB_RUN servelab::cli::run_main
#define SERVELAB_REPORT servelab::cli::report_main
#define SERVELAB_SEARCH servelab::cli::search_main
#else
#define SERVELAB_MEASURE nullptr
#define SERVELAB_RUN nullptr
#define SERVELAB_REPORT nullptr
#define SERVELAB_SEARCH nullptr
#endif
#ifdef SERVELAB_HAS_TRAIN
#define SERVELAB_TRAIN servelab::cli::train_main
#else
#define SERVELAB_TRAIN nullptr
#endif

const Command kCommands[] = {
    {"simulate", "run a simulation config in virtual time", SERVELAB_SIMULATE},
    {"serve", "start the HTTP inference server", SERVELAB_SERVE},
    {"load", "drive a running server with a workload over HTTP", SERVELAB_LOAD},
    {"route", "front end forwarding to N servers (a cluster on HTTP)", SERVELAB_ROUTE},
    {"measure", "measure models' cost profile on this machine", SERVELAB_MEASURE},
    {"run", "run an experiment config (sim, real or both)", SERVELAB_RUN},
    {"report", "turn a results folder into plots and a report", SERVELAB_REPORT},
    {"search", "search configurations under an SLO in simulation (and measure the best)",
     SERVELAB_SEARCH},
    {"train", "train a learned policy (rafiki-rl) in the simulator", SERVELAB_TRAIN},
};

void usage(FILE* out) {
  std::fprintf(out, "usage: servelab <command> [options]   (servelab <command> --help)\n\n");
  for (const auto& c : kCommands) std::fprintf(out, "  %-10s %s\n", c.name, c.help);
}

// Replaces this process by the engine binary with the same arguments; returns only on error.
int run_in_engine(char** argv) {
#ifdef SERVELAB_ENGINE_BINARY
  std::error_code ec;
  std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  std::string engine = (self.parent_path() / SERVELAB_ENGINE_BINARY).string();
  if (!ec) {
    argv[0] = engine.data();
    ::execv(engine.c_str(), argv);
  }
  std::fprintf(stderr, "servelab: cannot run %s for '%s': %s\n", engine.c_str(), argv[1],
               std::strerror(ec ? ec.value() : errno));
  return 2;
#else
  std::fprintf(stderr, "servelab: '%s' is not built (the engine needs LibTorch)\n", argv[1]);
  return 2;
#endif
}

}  // namespace

int main(int argc, char** argv) {
  // Every policy library registers once, before any command reads a policy name: the
  // control plane's built-in policies register themselves, the learned ones (learn/) here.
  servelab::learn::register_policies();
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  // The measuring command's former name, kept for scripts: the cost profile is what it writes.
  static char measure[] = "measure";
  if (!std::strcmp(argv[1], "profile")) argv[1] = measure;
  for (const auto& c : kCommands) {
    if (std::string(argv[1]) != c.name) continue;
    if (!c.main) return run_in_engine(argv);
    // Last line of defence: a subcommand that lets an exception escape still says what failed.
    try {
      return c.main(argc - 1, argv + 1);
    } catch (const std::bad_alloc&) {
      std::fprintf(stderr, "servelab %s: out of memory (a configuration value asks for too "
                           "much?)\n", c.name);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "servelab %s: %s\n", c.name, e.what());
    } catch (...) {
      std::fprintf(stderr, "servelab %s: failed with an unknown error\n", c.name);
    }
    return 1;
  }
  std::fprintf(stderr, "servelab: unknown command '%s'\n\n", argv[1]);
  usage(stderr);
  return 2;
}
