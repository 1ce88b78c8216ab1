#include "cli/slurm_run.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <nlohmann/json.hpp>

namespace servelab::cli {
namespace {

namespace fs = std::filesystem;
namespace po = boost::program_options;

// Single-quoted for bash: every byte as it is.
std::string quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string command_line(const SlurmPlan& p, const std::string& extra) {
  std::string cmd = quoted(p.binary) + " run";
  for (const auto& a : p.run_args) cmd += " " + quoted(a);
  return cmd + " " + extra;
}

// The runs to submit: all, or with --resume those without a finished run.json.
std::vector<size_t> tasks_to_run(const SlurmPlan& p, const std::vector<std::string>& names) {
  std::vector<size_t> tasks;
  for (size_t i = 0; i < names.size(); ++i) {
    if (p.resume) {
      std::ifstream in(fs::path(p.out_dir) / "runs" / names[i] / "run.json");
      const auto row = nlohmann::json::parse(in, nullptr, false);
      if (in && !row.is_discarded() && row.value("status", "") == "ok") continue;
    }
    tasks.push_back(i);
  }
  return tasks;
}

// The runs in groups of `per_task`, one line of run numbers per array task.
std::string task_groups(const std::vector<size_t>& tasks, size_t per_task) {
  std::string lines;
  for (size_t i = 0; i < tasks.size(); ++i)
    lines += std::to_string(tasks[i]) + (i + 1 == tasks.size() || (i + 1) % per_task == 0 ? "\n" : " ");
  return lines;
}

void write_script(const fs::path& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

std::string header(const SlurmPlan& p, const std::string& name, const std::string& log) {
  std::string h = "#!/bin/bash\n#SBATCH --job-name=" + name + "\n#SBATCH --output=" + log +
                  "\n#SBATCH --cpus-per-task=1\n";
  return h + "set -euo pipefail\ncd " + quoted(p.workdir) + "\n";
}

struct Submitted {
  int status = 0;       // sbatch's exit status (with --wait: the job's)
  std::string output;   // its output: with --parsable first the job id
  bool accepted() const { return !output.empty() && std::isdigit(static_cast<unsigned char>(output[0])); }
  std::string id() const { return output.substr(0, output.find_first_of(";\n")); }
};

// A shell command's exit status and output; nullopt when it cannot be started.
struct Captured {
  int status = 0;
  std::string output;
};
std::optional<Captured> capture(const std::string& cmd) {
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) return std::nullopt;
  Captured c;
  std::array<char, 512> buf{};
  while (fgets(buf.data(), buf.size(), pipe)) c.output += buf.data();
  const int status = pclose(pipe);
  c.status = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
  return c;
}

Submitted sbatch(const std::vector<std::string>& args) {
  std::string cmd = "sbatch";
  for (const auto& a : args) cmd += " " + quoted(a);
  const std::optional<Captured> ran = capture(cmd + " 2>&1");
  if (!ran) throw std::runtime_error("cannot run sbatch");
  Submitted s{ran->status, ran->output};
  while (!s.output.empty() && (s.output.back() == '\n' || s.output.back() == ' '))
    s.output.pop_back();
  return s;
}

// Whether Slurm still knows job `id` as pending or running (squeue lists no ended job).
bool job_listed(const std::string& id) {
  const auto ran = capture("squeue -h -o %T -j " + quoted(id) + " 2>/dev/null");
  if (!ran) return true;  // cannot tell: keep waiting for the status file
  return ran->output.find_first_not_of(" \n") != std::string::npos;
}

// Waits for the merge job's status file (merge.sbatch writes it as it ends) and returns the
// status in it. sbatch --wait polls the controller at intervals that grow to several seconds,
// a delay a sweep's wall time pays at its end; the file is looked at every 0.2 s, and the
// job's listing every 5 s, so that a merge cancelled before it wrote its status ends the
// wait (status 2).
int wait_for_merge(const fs::path& status_file, const std::string& id) {
  for (int i = 1;; ++i) {
    std::ifstream in(status_file);
    int status = 0;
    if (in >> status) return status;
    if (i % 25 == 0 && !job_listed(id)) {
      std::ifstream again(status_file);
      if (again >> status) return status;
      std::fprintf(stderr, "servelab run: merge job %s ended without its status (cancelled?)\n",
                   id.c_str());
      return 2;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

bool on_path(const char* tool) {
  return std::system((std::string("command -v ") + tool + " >/dev/null 2>&1").c_str()) == 0;
}

}  // namespace

SlurmPlan slurm_plan(const po::variables_map& vm) {
  SlurmPlan p;
  std::error_code ec;
  p.binary = fs::read_symlink("/proc/self/exe", ec).string();
  p.workdir = fs::current_path().string();
  p.out_dir = fs::absolute(vm["out"].as<std::string>()).string();
  if (vm["out"].as<std::string>().empty())
    throw std::invalid_argument("--slurm needs --out DIR (the tasks and the merge share it)");
  p.run_args = {fs::absolute(vm["experiment"].as<std::string>()).string(), "--out", p.out_dir};
  for (const char* key : {"mode", "url"})
    if (vm.count(key) && !vm[key].as<std::string>().empty())
      p.run_args.insert(p.run_args.end(), {std::string("--") + key, vm[key].as<std::string>()});
  for (const char* key : {"profile", "models-dir", "image"})
    if (vm.count(key) && !vm[key].as<std::string>().empty())
      p.run_args.insert(p.run_args.end(),
                        {std::string("--") + key, fs::absolute(vm[key].as<std::string>()).string()});
  if (vm.count("set"))
    for (const auto& s : vm["set"].as<std::vector<std::string>>())
      p.run_args.insert(p.run_args.end(), {"--set", s});
  if (vm.count("slurm-args")) {
    std::istringstream words(vm["slurm-args"].as<std::string>());
    for (std::string w; words >> w;) p.sbatch_args.push_back(w);
  }
  p.runs_per_task = vm["runs-per-task"].as<size_t>();
  if (p.runs_per_task < 1) throw std::invalid_argument("--runs-per-task must be at least 1");
  p.resume = vm.count("resume") > 0;
  p.wait = vm.count("wait") > 0;
  p.report = vm.count("report") > 0;
  return p;
}

int submit_to_slurm(const SlurmPlan& p, const experiments::ExperimentSpec& spec,
                    const experiments::RunOptions& ro) {
  if (!on_path("sbatch")) {
    std::fprintf(stderr, "servelab run: Slurm is not installed here (no sbatch on PATH); "
                         "nothing was submitted (bash scripts/slurm-local start runs one)\n");
    return 2;
  }
  const auto names = experiments::planned_run_names(spec, ro);
  const std::vector<size_t> tasks = tasks_to_run(p, names);
  const fs::path dir = fs::path(p.out_dir) / "slurm";
  fs::create_directories(dir);
  fs::create_directories(fs::path(p.out_dir) / "runs");
  const std::string name = "servelab-" + spec.name;
  // Array task K runs the run numbers on line K+1 of this submission's groups file (its own
  // name: a queued task of an earlier submission keeps reading its own).
  const size_t per_task = p.runs_per_task;  // at least 1 (slurm_plan)
  const size_t groups = (tasks.size() + per_task - 1) / per_task;
  const fs::path groups_file =
      dir / ("groups-" + std::to_string(std::chrono::system_clock::now().time_since_epoch().count()) +
             ".txt");
  write_script(groups_file, task_groups(tasks, per_task));
  write_script(dir / "tasks.sbatch",
               header(p, name, (dir / "task-%a.out").string()) + "status=0\n" +
                   "for run in $(sed -n \"$((SLURM_ARRAY_TASK_ID + 1))p\" " +
                   quoted(groups_file.string()) + "); do\n  " +
                   command_line(p, "--task \"$run\" -q") + " || status=$?\ndone\nexit \"$status\"\n");
  // The merge writes its exit status last (atomically, by rename), for --wait.
  const fs::path status_file = dir / "merge.status";
  fs::remove(status_file);
  write_script(dir / "merge.sbatch",
               header(p, name + "-merge", (dir / "merge.out").string()) + "status=0\n" +
                   command_line(p, std::string("--merge -q") + (p.report ? " --report" : "")) +
                   " || status=$?\necho \"$status\" > " + quoted(status_file.string() + ".tmp") +
                   "\nmv " + quoted(status_file.string() + ".tmp") + " " +
                   quoted(status_file.string()) + "\nexit \"$status\"\n");
  std::vector<std::string> merge_args = p.sbatch_args;
  merge_args.push_back("--parsable");
  if (!tasks.empty()) {
    std::vector<std::string> task_args = p.sbatch_args;
    task_args.insert(task_args.end(), {"--parsable", "--array=0-" + std::to_string(groups - 1),
                                       (dir / "tasks.sbatch").string()});
    const Submitted array = sbatch(task_args);
    if (array.status != 0 || !array.accepted()) {
      std::fprintf(stderr, "servelab run: Slurm refused the runs: %s\n", array.output.c_str());
      return 2;
    }
    std::fprintf(stderr, "run: %zu of %zu runs submitted as Slurm job array %s (%zu tasks)\n",
                 tasks.size(), names.size(), array.id().c_str(), groups);
    merge_args.push_back("--dependency=afterany:" + array.id());
  }
  merge_args.push_back((dir / "merge.sbatch").string());
  const Submitted merge = sbatch(merge_args);
  if (!merge.accepted()) {
    std::fprintf(stderr, "servelab run: Slurm refused the merge: %s\n", merge.output.c_str());
    return 2;
  }
  std::fprintf(stderr, "run: merge job %s writes %s/results.db when the runs end\n",
               merge.id().c_str(), p.out_dir.c_str());
  if (!p.wait) return 0;
  const int status = wait_for_merge(status_file, merge.id());
  if (status == 2) return 2;
  if (status != 0) {  // the merge found failed runs
    std::fprintf(stderr, "run: some runs failed (%s/slurm/merge.out); --resume runs them again\n",
                 p.out_dir.c_str());
    return 1;
  }
  return 0;
}

}  // namespace servelab::cli
