// `servelab run CONFIG --slurm`: a sweep as a Slurm job array, one task per planned run or per
// --runs-per-task of them (`servelab run ... --task N` writes run N's folder), and a merge job
// that runs after every task (afterany) and indexes the folders into results.db
// (`servelab run ... --merge`). `--resume` submits again only the runs whose folder holds no
// finished run.json, then the merge. Slurm's own tools (sbatch) submit; nothing here talks to
// its daemons.
#pragma once

#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "experiments/runner.h"

namespace servelab::cli {

// What a task needs to run the same plan: the servelab binary, the working folder and the
// arguments of `servelab run` (absolute paths) that define the plan.
struct SlurmPlan {
  std::string binary;
  std::string workdir;
  std::vector<std::string> run_args;  // experiment, --out, --mode, --set, ...
  std::string out_dir;                // absolute
  std::vector<std::string> sbatch_args;  // --slurm-args, split at spaces
  size_t runs_per_task = 1;              // runs one after another in an array task
  bool resume = false, wait = false, report = false;
};

SlurmPlan slurm_plan(const boost::program_options::variables_map& vm);

// Writes OUT/slurm/{tasks,merge}.sbatch, submits them and returns the exit status: 0
// submitted (with --wait: merged and every run ok), 1 runs failed, 2 Slurm missing or refused.
int submit_to_slurm(const SlurmPlan& plan, const experiments::ExperimentSpec& spec,
                    const experiments::RunOptions& ro);

}  // namespace servelab::cli
