// The built-in subset policies and the vote (ensemble.h).
#include "engine/control/ensemble.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>

namespace servelab {

namespace {

MemberMask full_mask(size_t n) { return MemberMask((uint64_t(1) << n) - 1); }

// Every member.
class AllMembers final : public SubsetPolicy {
 public:
  MemberMask select(std::span<const MemberView> m) override { return full_mask(m.size()); }
};

// The same configured members for every request.
class FixedMembers final : public SubsetPolicy {
 public:
  explicit FixedMembers(MemberMask mask) : mask_(mask) {}
  MemberMask select(std::span<const MemberView>) override { return mask_; }

 private:
  MemberMask mask_;
};

// The k members with the fewest queued requests; ties go to the earlier member.
class LeastLoaded final : public SubsetPolicy {
 public:
  explicit LeastLoaded(uint32_t k) : k_(k) {}
  MemberMask select(std::span<const MemberView> m) override {
    order_.resize(m.size());
    std::iota(order_.begin(), order_.end(), 0u);
    std::stable_sort(order_.begin(), order_.end(),
                     [&](uint32_t a, uint32_t b) { return m[a].queued < m[b].queued; });
    MemberMask mask = 0;
    for (size_t i = 0; i < std::min<size_t>(k_, m.size()); ++i) mask |= MemberMask(1) << order_[i];
    return mask;
  }

 private:
  uint32_t k_;
  std::vector<uint32_t> order_;  // scratch
};

// `members: [a, b]` (PolicyParams holds "a,b"): the names, each a member, as a mask.
MemberMask parse_member_list(const std::string& list, std::span<const std::string> members) {
  MemberMask mask = 0;
  size_t from = 0;
  while (from <= list.size()) {
    size_t comma = std::min(list.find(',', from), list.size());
    const std::string name = list.substr(from, comma - from);
    auto it = std::find(members.begin(), members.end(), name);
    if (it == members.end())
      throw ConfigError("subset fixed: '" + name + "' is not a member of the group");
    mask |= MemberMask(1) << (it - members.begin());
    from = comma + 1;
  }
  return mask;
}

std::unique_ptr<SubsetPolicy> make_fixed(const PolicySpec& s, std::span<const std::string> m) {
  if (!s.params.has("members"))
    throw ConfigError("subset fixed needs 'members' (a list of the group's members)");
  return std::make_unique<FixedMembers>(parse_member_list(s.params.get_string("members", ""), m));
}

std::unique_ptr<SubsetPolicy> make_least_loaded(const PolicySpec& s,
                                                std::span<const std::string> m) {
  const long long k = s.params.get_int("k", 1);
  if (k < 1 || k > (long long)m.size())
    throw ConfigError("subset least-loaded: k must be in 1.." + std::to_string(m.size()) +
                      " (the group's members), got " + std::to_string(k));
  return std::make_unique<LeastLoaded>(uint32_t(k));
}

void check_keys(const SubsetPolicyInfo& info, const PolicySpec& spec) {
  for (const auto& [key, value] : spec.params.values()) {
    if (std::find(info.keys.begin(), info.keys.end(), key) != info.keys.end()) continue;
    std::string known;
    for (const std::string& k : info.keys) known += (known.empty() ? "" : ", ") + k;
    throw ConfigError("subset " + info.name + ": unknown parameter '" + key + "' (known: " +
                      (known.empty() ? "none" : known) + ")");
  }
}

}  // namespace

const std::vector<SubsetPolicyInfo>& subset_policies() {
  static const std::vector<SubsetPolicyInfo> policies = {
      {"all", "every member answers every request", {},
       [](const PolicySpec&, std::span<const std::string>) {
         return std::unique_ptr<SubsetPolicy>(std::make_unique<AllMembers>());
       }},
      {"fixed", "the same members for every request: members (a list of member names)",
       {"members"}, make_fixed},
      {"least-loaded",
       "the k members with the fewest queued requests on the server (ties: member order): "
       "k (default 1)",
       {"k"}, make_least_loaded},
  };
  return policies;
}

std::vector<std::string> subset_policy_names() {
  std::vector<std::string> names;
  for (const SubsetPolicyInfo& p : subset_policies()) names.push_back(p.name);
  return names;
}

std::unique_ptr<SubsetPolicy> make_subset_policy(const PolicySpec& spec,
                                                 std::span<const std::string> members) {
  if (members.empty() || members.size() > kMaxGroupMembers)
    throw ConfigError("a group needs 1.." + std::to_string(kMaxGroupMembers) + " members");
  for (const SubsetPolicyInfo& p : subset_policies()) {
    if (p.name != spec.name) continue;
    check_keys(p, spec);
    return p.make(spec, members);
  }
  std::string known;
  for (const std::string& n : subset_policy_names()) known += (known.empty() ? "" : ", ") + n;
  throw ConfigError("unknown subset policy '" + spec.name + "' (known: " + known + ")");
}

double EnsembleAccuracy::of(MemberMask voters) const {
  if (voters == 0 || voters >= by_mask.size()) return std::numeric_limits<double>::quiet_NaN();
  return by_mask[voters];
}

int majority_vote(std::span<const int> labels, std::span<const double> accuracy,
                  MemberMask voters) {
  std::map<int, std::pair<int, double>> tally;  // label -> (votes, best voter's accuracy)
  for (size_t k = 0; k < labels.size(); ++k) {
    if (!(voters >> k & 1)) continue;
    auto& [votes, best] = tally.try_emplace(labels[k], 0, -1.0).first->second;
    ++votes;
    best = std::max(best, accuracy[k]);
  }
  int winner = -1;
  std::pair<int, double> top{0, -1.0};
  for (const auto& [label, score] : tally)
    if (score > top) top = score, winner = label;
  return winner;
}

}  // namespace servelab
