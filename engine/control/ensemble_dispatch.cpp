// The dispatcher registry and the built-in dispatchers (ensemble_dispatch.h):
//   clipper  Rafiki 7.2.2's Clipper: every member, the largest batch, once that many wait and
//            every member is idle ("Clipper always uses all models and the largest batch size");
//            fewer once the oldest reaches its deadline.
//   greedy   Algorithm 3 for the batch size over the group's queue, with Rafiki's two member
//            strategies: members: all (every member, run synchronously: the batch goes when all
//            are idle; c(b) is the slowest member's) or one (workers run asynchronously: each
//            batch goes to one idle member, the most accurate one; c(b) is that member's).
#include "engine/control/ensemble_dispatch.h"

#include <algorithm>
#include <map>
#include <mutex>

#include "engine/control/cost_profile.h"
#include "engine/control/policies/builtin.h"

namespace servelab {

namespace {

MemberMask all_of(size_t n) { return MemberMask((uint64_t(1) << n) - 1); }

bool all_idle(std::span<const GroupMemberView> m) {
  return std::all_of(m.begin(), m.end(), [](const GroupMemberView& v) { return v.idle; });
}

class ClipperDispatch final : public EnsembleDispatcher {
 public:
  explicit ClipperDispatch(uint32_t size) : size_(size) {}
  // A queue below the batch goes whole once its head reaches its deadline (if it has one).
  GroupDecision decide(const GroupView& v, Time now) override {
    if (v.queue.empty() || !all_idle(v.members)) return {};
    if (v.queue.size() >= size_) return {size_, all_of(v.members.size())};
    const Time deadline = v.queue.front().deadline;
    if (!(deadline < kNever)) return {};
    if (now >= deadline) return {uint32_t(v.queue.size()), all_of(v.members.size())};
    return {0, 0, deadline};
  }

 private:
  uint32_t size_;
};

struct GreedySettings {
  std::vector<uint32_t> sizes;  // B, sorted, distinct
  Time slo = kNever;            // tau; kNever: the head's deadline - arrival
  double delta = 0.1;           // in units of tau
  bool partial = false;         // a queue below min(B) goes whole once the rule holds
  bool one = false;             // members: one (asynchronous) instead of all
};

class GreedyDispatch final : public EnsembleDispatcher {
 public:
  explicit GreedyDispatch(GreedySettings s) : s_(std::move(s)) {}

  GroupDecision decide(const GroupView& v, Time now) override {
    if (v.queue.empty()) return {};
    const MemberMask mask = s_.one ? most_accurate_idle(v) : all_idle(v.members)
                                                                  ? all_of(v.members.size())
                                                                  : 0;
    if (mask == 0) return {};  // asked again when a member answers
    const uint32_t queued = uint32_t(std::min<size_t>(v.queue.size(), UINT32_MAX));
    if (queued >= s_.sizes.back()) return {s_.sizes.back(), mask};  // Algorithm 3, lines 2-5
    uint32_t b = 0;                                                 // line 7
    for (uint32_t size : s_.sizes)
      if (size <= queued) b = size;
    if (b == 0 && s_.partial) b = queued;
    const Request& head = v.queue.front();
    const Time tau = s_.slo != kNever ? s_.slo : head.deadline - head.arrival;
    if (!(tau < kNever)) return {};
    if (b == 0) {  // below min(B): wait for arrivals until the head has waited tau, then go whole
      if (now >= head.arrival + tau) return {queued, mask};
      return {0, 0, head.arrival + tau};
    }
    const Time due = head.arrival + tau - s_.delta * tau -
                     subset_batch_seconds(v.members, mask, b);  // line 8
    if (now >= due) return {b, mask};
    return {0, 0, due};
  }

 private:
  // The idle member whose own accuracy is highest (ties: member order); 0 when none is idle.
  static MemberMask most_accurate_idle(const GroupView& v) {
    MemberMask best = 0;
    double best_accuracy = -1;
    for (size_t k = 0; k < v.members.size(); ++k) {
      if (!v.members[k].idle) continue;
      const MemberMask bit = MemberMask(1) << k;
      const double a = v.accuracy ? v.accuracy->of(bit) : 0.0;
      if (best == 0 || a > best_accuracy) best = bit, best_accuracy = a;
    }
    return best;
  }

  GreedySettings s_;
};

std::unique_ptr<EnsembleDispatcher> make_clipper(const PolicySpec& s,
                                                 std::span<const std::string>) {
  return std::make_unique<ClipperDispatch>(
      uint32_t(detail::positive_int(s.params, "batch_size", 64)));
}

std::unique_ptr<EnsembleDispatcher> make_greedy(const PolicySpec& s,
                                                std::span<const std::string>) {
  GreedySettings g;
  g.sizes = detail::batch_size_list(s.params);
  std::sort(g.sizes.begin(), g.sizes.end());
  g.sizes.erase(std::unique(g.sizes.begin(), g.sizes.end()), g.sizes.end());
  g.slo = detail::slo_ms_param(s.params);
  g.delta = detail::param_in(s.params, "delta", 0.1, 0, 1);
  g.partial = s.params.get_bool("partial", false);
  const std::string members = s.params.get_string("members", "all");
  if (members != "all" && members != "one")
    throw ConfigError("dispatch greedy: members must be 'all' or 'one', got '" + members + "'");
  g.one = members == "one";
  return std::make_unique<GreedyDispatch>(std::move(g));
}

struct Registry {
  std::mutex mu;
  std::map<std::string, EnsembleDispatcherInfo> entries;
  Registry() {
    entries["clipper"] = {
        "clipper",
        "Rafiki's Clipper baseline: every member runs each batch; a batch of batch_size "
        "(default 64) goes once that many requests wait and every member is idle, or the "
        "requests that wait once the oldest reaches its deadline",
        {"batch_size"}, make_clipper, {}};
    entries["greedy"] = {
        "greedy",
        "Algorithm 3 over the group's queue: batch_sizes B (default 16,32,48,64), slo_ms tau "
        "(else each head's deadline - arrival), delta (fraction of tau, default 0.1), partial "
        "(bool: a queue below min(B) goes whole once the rule holds; without it, once its head "
        "has waited tau); members: all (default; every member, once "
        "all are idle, c(b) the slowest's) or one (the most accurate idle member, c(b) its own)",
        {"batch_sizes", "slo_ms", "delta", "partial", "members"}, make_greedy, {}};
  }
};

Registry& registry() {
  static Registry r;
  return r;
}

void check_keys(const EnsembleDispatcherInfo& info, const PolicySpec& spec) {
  for (const auto& [key, value] : spec.params.values()) {
    if (std::find(info.keys.begin(), info.keys.end(), key) != info.keys.end()) continue;
    std::string known;
    for (const std::string& k : info.keys) known += (known.empty() ? "" : ", ") + k;
    throw ConfigError("dispatch " + info.name + ": unknown parameter '" + key + "' (known: " +
                      (known.empty() ? "none" : known) + ")");
  }
}

}  // namespace

std::vector<EnsembleDispatcherInfo> ensemble_dispatchers() {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  std::vector<EnsembleDispatcherInfo> out;
  for (const auto& [name, info] : r.entries) out.push_back(info);
  return out;
}

void add_ensemble_dispatcher(EnsembleDispatcherInfo info) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  const std::string name = info.name;
  r.entries[name] = std::move(info);
}

namespace {

// The registered entry for `spec`, its parameter keys checked. Throws ConfigError.
EnsembleDispatcherInfo checked_entry(const PolicySpec& spec, std::span<const std::string> members) {
  if (members.empty() || members.size() > kMaxGroupMembers)
    throw ConfigError("a group needs 1.." + std::to_string(kMaxGroupMembers) + " members");
  EnsembleDispatcherInfo info;
  {
    Registry& r = registry();
    std::lock_guard lock(r.mu);
    auto it = r.entries.find(spec.name);
    if (it == r.entries.end()) {
      std::string known;
      for (const auto& [name, entry] : r.entries) known += (known.empty() ? "" : ", ") + name;
      throw ConfigError("unknown ensemble dispatcher '" + spec.name + "' (known: " + known + ")");
    }
    info = it->second;
  }
  check_keys(info, spec);
  return info;
}

}  // namespace

std::unique_ptr<EnsembleDispatcher> make_ensemble_dispatcher(const PolicySpec& spec,
                                                             std::span<const std::string> members) {
  return checked_entry(spec, members).make(spec, members);
}

void check_ensemble_dispatcher(const PolicySpec& spec, std::span<const std::string> members) {
  const EnsembleDispatcherInfo info = checked_entry(spec, members);
  if (info.check) info.check(spec, members);
  else info.make(spec, members);
}

double subset_batch_seconds(std::span<const GroupMemberView> members, MemberMask mask,
                            uint32_t b) {
  double slowest = 0;
  for (size_t k = 0; k < members.size(); ++k)
    if ((mask >> k & 1) && members[k].costs && !members[k].costs->empty())
      slowest = std::max(slowest, interpolate_batch_seconds(*members[k].costs, b));
  return slowest;
}

}  // namespace servelab
