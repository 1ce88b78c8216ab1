// Entry points of the `servelab` subcommands. Each is defined by the library that owns it and
// receives argv with the subcommand name as argv[0]. Returns the process exit code.
#pragma once

namespace servelab::cli {
int simulate_main(int argc, char** argv);  // simulator/
int serve_main(int argc, char** argv);     // engine/server/
int load_main(int argc, char** argv);      // workloads/loadgen/
int profile_main(int argc, char** argv);   // experiments/
int run_main(int argc, char** argv);       // experiments/
int report_main(int argc, char** argv);    // experiments/ (calls reports/)
int train_main(int argc, char** argv);     // learn/train/
}  // namespace servelab::cli
