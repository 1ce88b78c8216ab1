// A progress bar with ETA on stderr: "[=====>     ] 12/40 runs  1m05s left  concurrency=8 none".
// On a terminal it redraws one line; otherwise (logs, CI) it prints one line per step.
// The ETA is elapsed / work done * work left, with work counted in caller-given units (e.g.
// requests), so that a sweep whose points differ in size still gets a fair estimate.
// Not thread-safe: one runner thread calls it.
#pragma once

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

namespace servelab::experiments {

class ProgressBar {
 public:
  // `total_steps` steps worth `total_work` units in all.
  // `out` may be nullptr (silent). `unit` names the steps on the line ("runs", "phases").
  ProgressBar(size_t total_steps, double total_work, FILE* out = stderr,
              std::string unit = "runs");
  // Announces the step about to run (shown on the line).
  void start(const std::string& what);
  // Marks a step done that was worth `work` units.
  void done(double work);
  void finish();

  static std::string format_seconds(double s);  // "42s", "3m07s", "1h02m"

 private:
  void draw();
  size_t total_steps_, steps_ = 0;
  double total_work_, work_ = 0;
  FILE* out_;
  std::string unit_;
  bool tty_;
  std::string what_;
  std::chrono::steady_clock::time_point t0_;
};

// One line per phase of a long measurement as it starts, with the time it has taken and an
// ETA: "profile: 3/14 speed course (1m20s elapsed, about 4m10s left)". Each phase's planned
// seconds weigh it; once some are done the ETA scales the plan by how long they really took.
// Lines, not a redrawn bar, so that they interleave with a log. Not thread-safe: one thread at
// a time calls started().
class PhaseProgress {
 public:
  struct Phase {
    std::string what;
    double planned_seconds = 0;
  };
  // `out` may be nullptr (silent).
  PhaseProgress(std::string prefix, std::vector<Phase> phases, FILE* out = stderr);
  // Phase `index` starts (phases.size(): all done).
  void started(size_t index);
  // The line started(index) prints, `elapsed` seconds after the first phase started.
  std::string line(size_t index, double elapsed) const;

 private:
  std::string prefix_;
  std::vector<Phase> phases_;
  FILE* out_;
  std::chrono::steady_clock::time_point t0_;
};

}  // namespace servelab::experiments
