// `servelab <command> [options]`: one binary, one subcommand per body of ServeLab.
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <string>

#include "cli/subcommands.h"

namespace {

struct Command {
  const char* name;
  const char* help;
  int (*main)(int, char**);
};

const Command kCommands[] = {
#ifdef SERVELAB_HAS_SIMULATOR
    {"simulate", "run a simulation config in virtual time", servelab::cli::simulate_main},
#endif
#ifdef SERVELAB_HAS_SERVER
    {"serve", "start the HTTP inference server", servelab::cli::serve_main},
#endif
#ifdef SERVELAB_HAS_LOADGEN
    {"load", "drive a running server with a workload over HTTP", servelab::cli::load_main},
#endif
#ifdef SERVELAB_HAS_EXPERIMENTS
    {"profile", "measure model cost profiles on this machine", servelab::cli::profile_main},
    {"run", "run an experiment config (sim, real or both)", servelab::cli::run_main},
    {"report", "turn a results folder into plots and a report", servelab::cli::report_main},
#endif
};

void usage(FILE* out) {
  std::fprintf(out, "usage: servelab <command> [options]   (servelab <command> --help)\n\n");
  for (const auto& c : kCommands) std::fprintf(out, "  %-10s %s\n", c.name, c.help);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  for (const auto& c : kCommands) {
    if (std::string(argv[1]) != c.name) continue;
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
