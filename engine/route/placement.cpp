// The built-in placement policies.
#include "engine/route/placement.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <numeric>

#include "engine/control/policies/builtin.h"

namespace servelab::route {

namespace {

using detail::check_keys;

uint32_t replicas_param(const PolicySpec& p, long long fallback, uint32_t servers) {
  const long long k = p.params.get_int("replicas", fallback);
  if (k < 1 || k > 1024) throw ConfigError("replicas must be in 1..1024");
  return uint32_t(std::min<long long>(k, servers));
}

// Model indices by `key` descending, ties by index.
template <class Key>
std::vector<size_t> by_descending(size_t n, Key key) {
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return key(a) > key(b); });
  return order;
}

// Puts `replicas` copies of model `m` on the servers with the least `weight` so far (lowest
// index on ties), adding `share` to each chosen server's weight.
template <class W>
void place_least(Placement& p, size_t m, uint32_t replicas, std::vector<W>& weight, W share) {
  std::vector<uint32_t> order(p.servers);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return weight[a] < weight[b]; });
  order.resize(replicas);
  for (uint32_t s : order) weight[s] += share;
  std::sort(order.begin(), order.end());
  p.hosts[m] = std::move(order);
}

Placement everywhere(std::span<const PlacedModel> models, uint32_t servers) {
  Placement p{servers, {}};
  std::vector<uint32_t> all(servers);
  std::iota(all.begin(), all.end(), 0);
  p.hosts.assign(models.size(), all);
  return p;
}

// Replicas in proportion to load: `replicas` per model on average, at least 1, at most every
// server; the busiest models are placed first, each replica on the servers carrying the least
// load so far (a replica carries its model's load over its replica count).
Placement by_load(const PolicySpec& spec, std::span<const PlacedModel> models, uint32_t servers) {
  check_keys(spec.params, {"replicas"});
  const uint32_t k = replicas_param(spec, 2, servers);
  Placement p{servers, std::vector<std::vector<uint32_t>>(models.size())};
  double total = 0;
  for (const PlacedModel& m : models) {
    if (!(m.load >= 0) || !std::isfinite(m.load))
      throw ConfigError("model '" + m.name + "' has no finite load");
    total += m.load;
  }
  std::vector<double> carried(servers, 0.0);
  for (size_t i : by_descending(models.size(), [&](size_t i) { return models[i].load; })) {
    const double share = total > 0 ? models[i].load / total : 1.0 / double(models.size());
    const double want = std::round(share * double(k) * double(models.size()));
    const uint32_t r = uint32_t(std::clamp(want, 1.0, double(servers)));
    place_least(p, i, r, carried, models[i].load / r);
  }
  return p;
}

// `replicas` copies of each model, the largest first, each on the servers holding the fewest
// bytes so far: memory balanced across servers.
Placement memory_balanced(const PolicySpec& spec, std::span<const PlacedModel> models,
                          uint32_t servers) {
  check_keys(spec.params, {"replicas"});
  const uint32_t k = replicas_param(spec, 1, servers);
  Placement p{servers, std::vector<std::vector<uint32_t>>(models.size())};
  std::vector<uint64_t> bytes(servers, 0);
  for (size_t i : by_descending(models.size(), [&](size_t i) { return models[i].bytes; }))
    place_least(p, i, k, bytes, models[i].bytes);
  return p;
}

// Each model's servers named in the parameters: {name: static, resnet18: "0,1", vgg: "2"}.
Placement static_placement(const PolicySpec& spec, std::span<const PlacedModel> models,
                           uint32_t servers) {
  Placement p{servers, std::vector<std::vector<uint32_t>>(models.size())};
  for (const auto& [name, list] : spec.params.values()) {
    auto it = std::find_if(models.begin(), models.end(),
                           [&](const PlacedModel& m) { return m.name == name; });
    if (it == models.end()) throw ConfigError("names unknown model '" + name.substr(0, 64) + "'");
    std::vector<uint32_t>& hosts = p.hosts[size_t(it - models.begin())];
    size_t start = 0;
    while (start <= list.size()) {
      const size_t comma = std::min(list.find(',', start), list.size());
      const std::string item = list.substr(start, comma - start);
      unsigned s = 0;
      const auto [stop, ec] = std::from_chars(item.data(), item.data() + item.size(), s);
      if (item.empty() || ec != std::errc() || stop != item.data() + item.size() || s >= servers)
        throw ConfigError("model '" + name + "': server '" + item.substr(0, 32) +
                          "' is not one of 0.." + std::to_string(servers - 1));
      hosts.push_back(uint32_t(s));
      start = comma + 1;
    }
    std::sort(hosts.begin(), hosts.end());
    hosts.erase(std::unique(hosts.begin(), hosts.end()), hosts.end());
  }
  for (size_t i = 0; i < models.size(); ++i)
    if (p.hosts[i].empty()) throw ConfigError("model '" + models[i].name + "' has no server");
  return p;
}

std::vector<PlacementInfo> builtin_placements() {
  return {
      {"everywhere", "every model on every server",
       [](const PolicySpec& s, std::span<const PlacedModel> m, uint32_t n) {
         check_keys(s.params, {});
         return everywhere(m, n);
       }},
      {"memory-balanced", "replicas (default 1) per model, largest first, on the servers "
                          "holding the fewest bytes", memory_balanced},
      {"replicas-by-load", "replicas (default 2) per model on average, in proportion to load, "
                           "on the least loaded servers", by_load, true},
      {"static", "each model's servers as a parameter: MODEL: \"0,2\"", static_placement},
  };
}

}  // namespace

bool Placement::hosts_model(size_t model, uint32_t server) const {
  const auto& h = hosts[model];
  return std::binary_search(h.begin(), h.end(), server);
}

bool Placement::everywhere() const {
  return std::all_of(hosts.begin(), hosts.end(),
                     [&](const std::vector<uint32_t>& h) { return h.size() == servers; });
}

const std::vector<PlacementInfo>& placements() {
  static const std::vector<PlacementInfo> table = builtin_placements();
  return table;
}

std::vector<std::string> placement_names() {
  std::vector<std::string> out;
  for (const PlacementInfo& p : placements()) out.push_back(p.name);
  return out;
}

bool placement_reads_load(const std::string& name) {
  for (const PlacementInfo& p : placements())
    if (p.name == name) return p.reads_load;
  return false;
}

Placement make_placement(const PolicySpec& spec, std::span<const PlacedModel> models,
                         uint32_t servers) {
  if (servers == 0) throw ConfigError("a placement needs at least one server");
  for (const PlacementInfo& p : placements()) {
    if (p.name != spec.name) continue;
    try {
      return p.place(spec, models, servers);
    } catch (const ConfigError& e) {
      throw ConfigError("placement '" + spec.name + "': " + e.what());
    }
  }
  std::string known;
  for (const std::string& n : placement_names()) known += (known.empty() ? "" : ", ") + n;
  throw ConfigError("unknown placement '" + spec.name + "' (known: " + known + ")");
}

}  // namespace servelab::route
