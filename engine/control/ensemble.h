// Model groups (ensembles, Rafiki section 5): a request to a group fans out to a subset of
// its member models, and the members that answer vote (majority, ties to the more accurate
// model). What is here is the control plane's part, free of I/O and clocks: which members a
// request goes to (a subset policy, registered by name with a factory, as routers and
// batching policies are) and the expected accuracy of the members that voted.
// Policies are owned by whoever fans requests out (the simulator's front end); one thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/control/policy_params.h"
#include "engine/control/types.h"

namespace servelab {

// A group has at most this many members: a set of members is a bit mask (bit k: member k).
constexpr uint32_t kMaxGroupMembers = 8;
using MemberMask = uint32_t;

// What a subset policy sees of one member when a request arrives.
struct MemberView {
  ModelId model = 0;
  uint64_t queued = 0;  // requests waiting in its queue on the server the request reached
};

// Picks the members one group request goes to. Deterministic: the same views in the same
// order give the same subset.
class SubsetPolicy {
 public:
  virtual ~SubsetPolicy() = default;
  // A non-empty mask over `members` (bit k: members[k]); `members` is never empty.
  virtual MemberMask select(std::span<const MemberView> members) = 0;
};

// A policy's maker: the spec's parameters and the group's member names (in member order), so
// that parameters may name members. Throws ConfigError on a bad parameter.
using SubsetFactory = std::function<std::unique_ptr<SubsetPolicy>(
    const PolicySpec&, std::span<const std::string> members)>;

struct SubsetPolicyInfo {
  std::string name;
  std::string help;               // one line: what it does and its parameters
  std::vector<std::string> keys;  // its parameters; any other key is an error
  SubsetFactory make;
};

// The registered subset policies: all, fixed, least-loaded.
const std::vector<SubsetPolicyInfo>& subset_policies();
std::vector<std::string> subset_policy_names();
// Makes the policy `spec` names for a group of `members`; throws ConfigError naming the known
// policies (unknown name), an unknown parameter key, or a bad value.
std::unique_ptr<SubsetPolicy> make_subset_policy(const PolicySpec& spec,
                                                 std::span<const std::string> members);

// The measured accuracy of every non-empty subset of a group's members, indexed by mask
// (index 0, the empty subset, is NaN: nobody voted, no answer). Value type.
struct EnsembleAccuracy {
  std::vector<double> by_mask;  // size 2^members
  double of(MemberMask voters) const;  // NaN for the empty set or a mask out of range
};

// Rafiki's vote over one input: the label most members gave; a tie goes to the label of the
// most accurate member among the tied labels' voters. `labels[k]` and `accuracy[k]` are member
// k's answer and measured accuracy; members outside `voters` do not vote. -1 when none voted.
int majority_vote(std::span<const int> labels, std::span<const double> accuracy,
                  MemberMask voters);

}  // namespace servelab
