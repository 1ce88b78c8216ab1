#include "experiments/progress.h"

#include <unistd.h>

#include <algorithm>

namespace servelab::experiments {

ProgressBar::ProgressBar(size_t total_steps, double total_work, FILE* out)
    : total_steps_(total_steps), total_work_(total_work), out_(out),
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
                     std::to_string(total_steps_) + " runs  " +
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

}  // namespace servelab::experiments
