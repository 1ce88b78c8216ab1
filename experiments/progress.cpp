#include "experiments/progress.h"

#include <unistd.h>

#include <algorithm>
#include <utility>

namespace servelab::experiments {

ProgressBar::ProgressBar(size_t total_steps, double total_work, FILE* out, std::string unit)
    : total_steps_(total_steps), total_work_(total_work), out_(out), unit_(std::move(unit)),
      tty_(out && isatty(fileno(out))), t0_(std::chrono::steady_clock::now()) {}

std::string ProgressBar::format_seconds(double s) {
  char buf[32];
  long t = static_cast<long>(s + 0.5);
  if (t < 60) std::snprintf(buf, sizeof buf, "%lds", t);
  else if (t < 3600) std::snprintf(buf, sizeof buf, "%ldm%02lds", t / 60, t % 60);
  else std::snprintf(buf, sizeof buf, "%ldh%02ldm", t / 3600, (t % 3600) / 60);
  return buf;
}

void ProgressBar::start(const std::string& what) {
  what_ = what;
  if (tty_) draw();
}

void ProgressBar::done(double work) {
  ++steps_;
  work_ += work;
  draw();
}

void ProgressBar::draw() {
  if (!out_) return;
  double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  double frac = total_work_ > 0 ? std::min(1.0, work_ / total_work_) : 0;
  std::string eta = frac > 0 ? format_seconds(elapsed / frac * (1 - frac)) + " left" : "";
  const int width = 24;
  int filled = static_cast<int>(frac * width);
  std::string bar(filled, '=');
  if (filled < width) bar += '>' + std::string(width - filled - 1, ' ');
  std::string line = "[" + bar + "] " + std::to_string(steps_) + "/" +
                     std::to_string(total_steps_) + " " + unit_ + "  " +
                     format_seconds(elapsed) + " elapsed  " + eta + "  " + what_;
  if (tty_) {
    if (line.size() > 110) line.resize(110);
    std::fprintf(out_, "\r%-110s", line.c_str());
  } else {
    std::fprintf(out_, "%s\n", line.c_str());
  }
  std::fflush(out_);
}

void ProgressBar::finish() {
  if (!out_) return;
  if (tty_) std::fprintf(out_, "\n");
  std::fflush(out_);
}

PhaseProgress::PhaseProgress(std::string prefix, std::vector<Phase> phases, FILE* out)
    : prefix_(std::move(prefix)), phases_(std::move(phases)), out_(out),
      t0_(std::chrono::steady_clock::now()) {}

std::string PhaseProgress::line(size_t index, double elapsed) const {
  double done = 0, left = 0;
  for (size_t k = 0; k < phases_.size(); ++k) (k < index ? done : left) += phases_[k].planned_seconds;
  // Before any phase is done the plan is all there is; after, it is scaled by how it went.
  const double eta = done > 0 && elapsed > 0 ? left * elapsed / done : left;
  const std::string times = "(" + ProgressBar::format_seconds(elapsed) + " elapsed, about " +
                            ProgressBar::format_seconds(eta) + " left)";
  if (index >= phases_.size())
    return prefix_ + ": done in " + ProgressBar::format_seconds(elapsed);
  return prefix_ + ": " + std::to_string(index + 1) + "/" + std::to_string(phases_.size()) +
         " " + phases_[index].what + " " + times;
}

void PhaseProgress::started(size_t index) {
  if (index == 0) t0_ = std::chrono::steady_clock::now();
  if (!out_) return;
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  std::fprintf(out_, "%s\n", line(index, elapsed).c_str());
  std::fflush(out_);
}

}  // namespace servelab::experiments
