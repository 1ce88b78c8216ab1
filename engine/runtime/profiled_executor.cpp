// Profiled executor: carries out batches and loads by sleeping the time a cost profile gives,
// so the engine's threads, queues and controller run for real on models that need no
// LibTorch (e.g. a paper's profile, or a measured one replayed).
#include <chrono>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "engine/runtime/executor.h"

namespace servelab::runtime {
namespace {

void sleep_for(double seconds) {
  if (seconds > 0) std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
}

class ProfiledExecutor final : public Executor {
 public:
  ProfiledExecutor(CostProfile profile, CostNoise noise, uint64_t seed)
      : profile_(std::move(profile)), noise_(noise), seed_(seed) {}

  ModelMeasure add(ModelId id, const ModelSpec& spec, uint32_t, uint32_t) override {
    const ModelProfile* p = profile_.find(spec.name);
    if (!p) throw ModelError(400, "the cost profile has no model named '" + spec.name + "'");
    std::lock_guard lock(mu_);
    models_[id] = p;
    ModelMeasure m;
    m.param_bytes = p->size_bytes;  // the profile's size already includes any workspace
    return m;
  }
  void remove(ModelId id) override {
    std::lock_guard lock(mu_);
    models_.erase(id);
  }
  LoadParts load(ModelId id, Tier from, Tier to) override {
    sleep_for(find(id)->load_seconds(from, to));
    return {};
  }
  void evict(ModelId, Tier) override {}
  void run(ModelId id, Tier, const std::vector<const Input*>& inputs,
           std::vector<std::vector<float>>& outputs) override {
    compute(*find(id), inputs, outputs);
  }
  // Private weights: the profile's load from disk into the executing (host) tier.
  std::unique_ptr<PrivateCopy> load_private(ModelId id) override {
    auto copy = std::make_unique<ProfiledCopy>();
    copy->profile = find(id);
    copy->parts.read_s = copy->profile->load_seconds(Tier::Disk, Tier::Host);
    sleep_for(copy->parts.read_s);
    return copy;
  }
  void run_private(ModelId, const PrivateCopy& copy, const std::vector<const Input*>& inputs,
                   std::vector<std::vector<float>>& outputs) override {
    compute(*static_cast<const ProfiledCopy&>(copy).profile, inputs, outputs);
  }
  bool normalizes_on_device() const override { return false; }
  bool accepts_empty_input() const override { return true; }
  Tier exec_tier() const override { return Tier::Host; }

 private:
  struct ProfiledCopy final : PrivateCopy {
    const ModelProfile* profile = nullptr;
  };

  void compute(const ModelProfile& p, const std::vector<const Input*>& inputs,
               std::vector<std::vector<float>>& outputs) {
    auto b = static_cast<uint32_t>(inputs.size());
    double t;
    {
      std::lock_guard lock(mu_);  // one RNG stream for all workers: draws stay reproducible per order
      t = p.sample_batch_latency(b, noise_, rng_);
    }
    sleep_for(t);
    outputs.assign(inputs.size(), {});
  }

  const ModelProfile* find(ModelId id) {
    std::lock_guard lock(mu_);
    auto it = models_.find(id);
    if (it == models_.end()) throw std::runtime_error("model was removed");
    return it->second;
  }

  const CostProfile profile_;
  const CostNoise noise_;
  const uint64_t seed_;
  std::mutex mu_;
  std::mt19937_64 rng_{seed_};
  std::unordered_map<ModelId, const ModelProfile*> models_;
};

}  // namespace

std::unique_ptr<Executor> make_profiled_executor(CostProfile profile, CostNoise noise,
                                                 uint64_t seed) {
  return std::make_unique<ProfiledExecutor>(std::move(profile), noise, seed);
}

}  // namespace servelab::runtime
