// The built-in routers. Each draws from its own seeded stream (random choices only), so a
// cluster's routing is deterministic for a given seed.
#include "engine/route/router.h"

#include <algorithm>
#include <random>

#include "engine/control/policies/builtin.h"

namespace servelab::route {

namespace {

// Uniformly random server.
class RandomRouter final : public Router {
 public:
  explicit RandomRouter(uint64_t seed) : rng_(seed) {}
  bool reads_load() const override { return false; }
  size_t route(RequestId, ModelId, std::span<const ServerView> s, Time) override {
    return size_t(rng_() % s.size());
  }

 private:
  std::mt19937_64 rng_;
};

// Servers in turn: 0, 1, ..., n-1, 0, ...
class RoundRobinRouter final : public Router {
 public:
  bool reads_load() const override { return false; }
  size_t route(RequestId, ModelId, std::span<const ServerView> s, Time) override {
    return next_++ % s.size();
  }

 private:
  uint64_t next_ = 0;
};

// The server holding the fewest requests (lowest index on ties): join-the-shortest-queue.
class LeastOutstandingRouter final : public Router {
 public:
  size_t route(RequestId, ModelId, std::span<const ServerView> s, Time) override {
    size_t best = 0;
    for (size_t i = 1; i < s.size(); ++i)
      if (s[i].outstanding < s[best].outstanding) best = i;
    return best;
  }
};

// Mitzenmacher's power of d choices: d distinct servers drawn at random, the one holding the
// fewest requests wins (the first drawn on ties). d = 2 by default.
class PowerOfChoicesRouter final : public Router {
 public:
  PowerOfChoicesRouter(uint64_t seed, uint32_t d) : rng_(seed), d_(d) {}
  size_t route(RequestId, ModelId, std::span<const ServerView> s, Time) override {
    size_t n = s.size();
    uint32_t d = uint32_t(std::min<size_t>(d_, n));
    picked_.clear();
    size_t best = n;
    while (picked_.size() < d) {
      size_t i = size_t(rng_() % n);
      if (std::find(picked_.begin(), picked_.end(), i) != picked_.end()) continue;
      picked_.push_back(i);
      if (best == n || s[i].outstanding < s[best].outstanding) best = i;
    }
    return best;
  }

 private:
  std::mt19937_64 rng_;
  uint32_t d_;
  std::vector<size_t> picked_;
};

std::vector<RouterInfo> builtin_routers() {
  using detail::check_keys;
  return {
      {"least-outstanding", "the server holding the fewest requests (join the shortest queue)",
       [](const PolicySpec& p, uint64_t) -> std::unique_ptr<Router> {
         check_keys(p.params, {});
         return std::make_unique<LeastOutstandingRouter>();
       }},
      {"power-of-two", "d random servers (choices, default 2), the one holding fewest requests",
       [](const PolicySpec& p, uint64_t seed) -> std::unique_ptr<Router> {
         check_keys(p.params, {"choices"});
         long long d = p.params.get_int("choices", 2);
         if (d < 1 || d > 1024) throw ConfigError("choices must be in 1..1024");
         return std::make_unique<PowerOfChoicesRouter>(seed, uint32_t(d));
       }},
      {"random", "a uniformly random server",
       [](const PolicySpec& p, uint64_t seed) -> std::unique_ptr<Router> {
         check_keys(p.params, {});
         return std::make_unique<RandomRouter>(seed);
       }},
      {"round-robin", "servers in turn",
       [](const PolicySpec& p, uint64_t) -> std::unique_ptr<Router> {
         check_keys(p.params, {});
         return std::make_unique<RoundRobinRouter>();
       }},
  };
}

}  // namespace

const std::vector<RouterInfo>& routers() {
  static const std::vector<RouterInfo> table = builtin_routers();
  return table;
}

std::vector<std::string> router_names() {
  std::vector<std::string> out;
  for (const RouterInfo& r : routers()) out.push_back(r.name);
  return out;
}

std::unique_ptr<Router> make_router(const PolicySpec& spec, uint64_t seed) {
  for (const RouterInfo& r : routers()) {
    if (r.name != spec.name) continue;
    try {
      return r.make(spec, seed);
    } catch (const ConfigError& e) {
      throw ConfigError("router '" + spec.name + "': " + e.what());
    }
  }
  std::string known;
  for (const std::string& n : router_names()) known += (known.empty() ? "" : ", ") + n;
  throw ConfigError("unknown router '" + spec.name + "' (known: " + known + ")");
}

}  // namespace servelab::route
