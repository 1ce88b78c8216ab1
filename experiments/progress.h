// A progress bar with ETA on stderr: "[=====>     ] 12/40 runs  1m05s left  concurrency=8 none".
// On a terminal it redraws one line; otherwise (logs, CI) it prints one line per step.
// The ETA is elapsed / work done * work left, with work counted in caller-given units (e.g.
// requests), so that a sweep whose points differ in size still gets a fair estimate.
// Not thread-safe: one runner thread calls it.
#pragma once

#include <chrono>
#include <cstdio>
#include <string>

namespace servelab::experiments {

class ProgressBar {
 public:
  // `total_steps` steps worth `total_work` units in all.
  // `out` may be nullptr (silent).
  ProgressBar(size_t total_steps, double total_work, FILE* out = stderr);
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
  bool tty_;
  std::string what_;
  std::chrono::steady_clock::time_point t0_;
};

}  // namespace servelab::experiments
