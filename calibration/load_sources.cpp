#include "calibration/load_sources.h"

#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <future>
#include <stdexcept>

#include "common/clock.h"
#include "common/median.h"
#include "common/page_cache.h"

namespace servelab::experiments {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// A fresh directory under the system's temporary one, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "servelab-profile-store-XXXXXX").string();
    if (!::mkdtemp(pattern.data()))
      throw std::runtime_error("profile: cannot create a directory for a weight store in " +
                               fs::temp_directory_path().string());
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// `samples` timed loads (after one untimed), `before_load` run before each of them, once
// the model's previous copy is evicted (a mapped page stays in the page cache).
LoadCost timed_loads(runtime::Executor& exec, ModelId id, const runtime::Input& input,
                     uint32_t samples, double warm_batch_s,
                     const std::function<void()>& before_load) {
  runtime::TaskThread loader;
  std::vector<LoadSample> taken;
  for (uint32_t i = 0; i <= samples; ++i) {
    LoadSample s = sample_load(loader, exec, id, input, before_load);
    if (i > 0) taken.push_back(s);
  }
  return median_cost(taken, warm_batch_s);
}

void log_cost(const std::function<void(const std::string&)>& log, const std::string& model,
              LoadSource source, const LoadCost& c) {
  if (!log) return;
  log(model + ": load from " + load_source_name(source) + " " +
      std::to_string(c.total() * 1e3) + " ms (read " + std::to_string(c.read * 1e3) +
      ", deserialize " + std::to_string(c.deserialize * 1e3) + ", share " +
      std::to_string(c.share * 1e3) + ", copy " + std::to_string(c.copy * 1e3) +
      ", first batch +" + std::to_string(c.first_batch * 1e3) + ")");
}

}  // namespace

LoadSample sample_load(runtime::TaskThread& loader, runtime::Executor& exec, ModelId id,
                       const runtime::Input& input, const std::function<void()>& before_load) {
  std::promise<LoadSample> loaded;
  loader.post([&] {
    try {
      LoadSample s;
      auto t0 = Clock::now();
      exec.evict(id, Tier::Host);
      s.evict_s = seconds_since(t0);
      if (before_load) before_load();
      auto t_load = Clock::now();
      s.parts = exec.load(id, Tier::Disk, Tier::Host);
      s.load_s = seconds_since(t_load);
      loaded.set_value(s);
    } catch (...) {
      loaded.set_exception(std::current_exception());
    }
  });
  LoadSample s = loaded.get_future().get();
  std::vector<const runtime::Input*> one(1, &input);
  std::vector<std::vector<float>> probs;
  auto t1 = Clock::now();
  exec.run(id, Tier::Host, one, probs);
  s.first_batch_s = seconds_since(t1);
  return s;
}

LoadCost median_cost(const std::vector<LoadSample>& samples, double warm_batch_s) {
  auto median_of = [&](auto part) {
    std::vector<double> v;
    for (const LoadSample& s : samples) v.push_back(part(s));
    return median(v);
  };
  LoadCost c;
  c.read = median_of([](const LoadSample& s) { return s.parts.read_s; });
  c.deserialize = median_of([](const LoadSample& s) { return s.parts.deserialize_s; });
  c.copy = median_of([](const LoadSample& s) { return s.parts.copy_s; });
  c.share = median_of([](const LoadSample& s) { return s.parts.share_s; });
  c.first_batch = std::max(
      0.0, median_of([](const LoadSample& s) { return s.first_batch_s; }) - warm_batch_s);
  const double load_s = median_of([](const LoadSample& s) { return s.load_s; });
  const double phases = c.total() - c.first_batch;
  if (load_s > 0 && phases > 0) {
    const double first_batch = c.first_batch;
    c.scale(load_s / phases);
    c.first_batch = first_batch;
  }
  return c;
}

void measure_load_sources(runtime::Executor& exec, ModelId id, const runtime::ModelSpec& spec,
                          const runtime::Input& input, int threads, uint32_t samples,
                          ModelProfile& p, const std::function<void(const std::string&)>& log) {
  if (samples == 0) return;
  const double warm = p.batch_latency(1);
  auto measured = [&](LoadSource source, const LoadCost& c) {
    p.load_sources[int(source)] = c;
    log_cost(log, p.name, source, c);
  };
  measured(LoadSource::FileCold, timed_loads(exec, id, input, samples, warm,
                                             [&] { drop_from_page_cache(spec.file); }));
  TempDir dir;
  auto shared = runtime::make_torch_executor("cpu", threads, {dir.path().string(), "profile"});
  shared->add(id, spec, 1, 1);  // writes the model's blobs and skeleton into the store
  measured(LoadSource::Store, timed_loads(*shared, id, input, samples, warm, {}));
  measured(LoadSource::StoreCold, timed_loads(*shared, id, input, samples, warm,
                                              [&] { drop_from_page_cache(dir.path()); }));
  // A sibling of the same code stays loaded: each load copies its module.
  runtime::ModelSpec sibling_spec = spec;
  sibling_spec.name += "-sibling";
  const ModelId sibling = ModelId(id + 1);
  shared->add(sibling, sibling_spec, 1, 1);
  measured(LoadSource::StoreSibling, timed_loads(*shared, id, input, samples, warm, {}));
  shared->remove(sibling);
  shared->remove(id);
}

}  // namespace servelab::experiments
