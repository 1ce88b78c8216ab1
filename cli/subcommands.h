// Entry points of the `servelab` subcommands, one file each in cli/ (NAME_main.cpp), each
// linked as its own library on the body it drives (cli/CMakeLists.txt). Each receives argv with
// the subcommand name as argv[0] and returns the process exit code. main.cpp registers the
// policy libraries before calling one; a caller of its own (a test) registers what it needs.
#pragma once

namespace servelab::cli {
int simulate_main(int argc, char** argv);  // simulate_main.cpp: simulator/
int serve_main(int argc, char** argv);     // serve_main.cpp: engine/server/
int load_main(int argc, char** argv);      // load_main.cpp: workloads/loadgen/
int route_main(int argc, char** argv);     // route_main.cpp: engine/route/http/
int measure_main(int argc, char** argv);   // experiments_main.cpp: calibration/
int run_main(int argc, char** argv);       // experiments_main.cpp: experiments/
int report_main(int argc, char** argv);    // experiments_main.cpp (calls reports/)
int search_main(int argc, char** argv);    // search_main.cpp: experiments/ + capacity/
int train_main(int argc, char** argv);     // train_main.cpp: learn/train/
}  // namespace servelab::cli
