// bench_gpu: runs the GPU benchmarks (bench_gpu.h) on the CUDA device LibTorch sees.
//   bench_gpu --out DIR [--gpu NAME] [--only swap|batch|paired|profile|sweep]... [--seconds S]
#include "tests/gpu/bench_gpu.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <set>
#include <stdexcept>

#include "tests/gpu/gpu_env.h"

namespace servelab::gpu {

std::string jstr(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) continue;  // names and numbers only: drop controls
    out += c;
  }
  return out + "\"";
}

std::string jnum(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

std::string jobj(const std::vector<std::pair<std::string, std::string>>& fields) {
  std::string out = "{";
  for (size_t i = 0; i < fields.size(); ++i)
    out += (i ? ", " : "") + jstr(fields[i].first) + ": " + fields[i].second;
  return out + "}";
}

void write_records(const BenchOptions& o, const std::string& name,
                   const std::vector<std::string>& records) {
  const std::string path = o.out_dir + "/" + name;
  std::ofstream f(path);
  f << "[\n";
  for (size_t i = 0; i < records.size(); ++i)
    f << "  " << records[i] << (i + 1 < records.size() ? ",\n" : "\n");
  f << "]\n";
  if (!f) throw std::runtime_error("cannot write " + path);
  std::printf("bench_gpu: wrote %s\n", path.c_str());
}

}  // namespace servelab::gpu

int main(int argc, char** argv) {
  using namespace servelab::gpu;
  BenchOptions o;
  std::set<std::string> only;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--out" && has_value) o.out_dir = argv[++i];
    else if (arg == "--gpu" && has_value) o.gpu = argv[++i];
    else if (arg == "--only" && has_value) only.insert(argv[++i]);
    else if (arg == "--seconds" && has_value) o.seconds_per_variant = std::atof(argv[++i]);
    else {
      std::fprintf(stderr, "bench_gpu: unknown argument '%s' (expected --out DIR, --gpu NAME, "
                   "--only swap|batch|paired|profile|sweep, --seconds S)\n", arg.c_str());
      return 2;
    }
  }
  if (!cuda_ready()) {
    std::fprintf(stderr, "bench_gpu: LibTorch sees no CUDA device\n");
    return 1;
  }
  int failed = 0;
  auto part = [&](const char* name, void (*f)(const BenchOptions&)) {
    if (!only.empty() && !only.count(name)) return;
    try {
      f(o);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "bench_gpu: %s failed: %s\n", name, e.what());
      ++failed;
    }
  };
  part("swap", bench_swap);
  part("batch", bench_batch);
  part("paired", bench_paired);
  part("profile", bench_profile);
  part("sweep", bench_sweep);
  return failed ? 1 : 0;
}
