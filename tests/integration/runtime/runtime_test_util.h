// Helpers for the engine tests: model files, engine options, and a thread-safe collector of
// classify results. Models come from `bash scripts/make-models --tiny`.
#pragma once

#include <catch2/catch.hpp>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "engine/runtime/engine.h"

namespace servelab::runtime::test {

inline std::string models_dir() { return std::string(SERVELAB_SOURCE_DIR) + "/models"; }

inline std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) FAIL("cannot read " << path << " (run: bash scripts/make-models --tiny)");
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

inline std::vector<std::string> read_labels(const std::string& path) {
  std::vector<std::string> labels;
  std::istringstream s(read_file(path));
  for (std::string line; std::getline(s, line);) labels.push_back(line);
  return labels;
}

// A spec for one of the exported models, registered under `name` (default: the model's).
inline ModelSpec tiny_spec(const std::string& model, const std::string& name = "") {
  ModelSpec spec;
  spec.name = name.empty() ? model : name;
  spec.file = models_dir() + "/" + model + ".pt";
  if (!std::filesystem::exists(spec.file))
    FAIL("missing " << spec.file << " (run: bash scripts/make-models --tiny)");
  spec.labels = read_labels(models_dir() + "/" + model + ".labels.txt");
  spec.preprocess.input_width = spec.preprocess.input_height = 32;
  spec.preprocess.resize = model == "tiny_cnn" ? 36 : 0;
  return spec;
}

inline PolicyParams params(std::map<std::string, std::string> values) {
  return PolicyParams(std::move(values));
}

inline EngineOptions options(uint32_t workers, const std::string& batching = "none",
                             PolicyParams params = {}) {
  EngineOptions o;
  o.control.workers = workers;
  o.control.max_batch = 32;
  o.control.batching = {batching, std::move(params)};
  o.intra_op_threads = 1;
  return o;
}

// Collects results of asynchronous classify calls; wait() fails the test after `timeout`.
class Collector {
 public:
  std::function<void(ClassifyResult)> callback() {
    return [this](ClassifyResult r) {
      std::lock_guard lock(mu_);
      results_.push_back(std::move(r));
      cv_.notify_all();
    };
  }
  std::vector<ClassifyResult> wait(size_t n, double timeout_s = 60) {
    std::unique_lock lock(mu_);
    bool ok = cv_.wait_for(lock, std::chrono::duration<double>(timeout_s),
                           [&] { return results_.size() >= n; });
    INFO("got " << results_.size() << " of " << n << " results");
    REQUIRE(ok);
    return results_;
  }
  size_t count() {
    std::lock_guard lock(mu_);
    return results_.size();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<ClassifyResult> results_;
};

}  // namespace servelab::runtime::test
