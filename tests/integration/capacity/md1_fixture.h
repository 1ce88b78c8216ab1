// What the capacity tests share: an M/D/1 server (one model costing exactly 10 ms, one
// worker), the closed form they check it against, and a way to call a CLI command in process.
#pragma once

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace servelab::test {

constexpr double kMd1Service = 0.010;  // seconds a request

// Erlang (1909): for M/D/1 with service D and rho = lambda D,
//   P(W <= x) = (1 - rho) sum_{k=0}^{floor(x/D)} (lambda (k D - x))^k / k! e^{-lambda (k D - x)}.
inline double md1_wait_cdf(double lambda, double x) {
  double sum = 0;
  for (int k = 0; k <= static_cast<int>(std::floor(x / kMd1Service)); ++k) {
    const double a = lambda * (k * kMd1Service - x);
    sum += std::pow(a, k) / std::tgamma(k + 1) * std::exp(-a);
  }
  return (1 - lambda * kMd1Service) * sum;
}

// DIR/md1-profile.yaml: the model md1, 10 ms a request whatever the batch, no spread.
inline void write_md1_profile(const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "md1-profile.yaml")
      << "models:\n  md1:\n    size_mb: 1\n    batch_latency_ms:\n"
         "      - {batch: 1, mean: 10.0, stddev: 0}\n"
         "    load_ms: {disk->host: 1, host->device: 1}\n";
}

// Runs `servelab COMMAND ARGS...` in this process through its main function.
template <class Main>
int run_command(Main main, const std::string& command, std::vector<std::string> args) {
  args.insert(args.begin(), command);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return main(int(argv.size()), argv.data());
}

}  // namespace servelab::test
