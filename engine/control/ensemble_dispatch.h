// Ensemble dispatching (Rafiki 5.2 and 7.2.2): a model group keeps one queue of its requests,
// and at each decision a dispatcher picks how many of the oldest go together (the batch size
// b) and to which members (a non-empty subset); every selected member runs that batch, and
// the members that answer vote. This is the other way a group can serve (ensemble.h's subset
// policies choose members per request at arrival, each member batching on its own).
// Decisions are asked for when a group request arrives, when a member answers, and when the
// dispatcher asked to be woken. Dispatchers are registered by name with a factory, as
// batching policies are; learn/ adds rafiki-rl's. Free of clocks and I/O; one thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/control/ensemble.h"
#include "engine/control/policy_params.h"
#include "engine/control/types.h"

namespace servelab {

// One member as a dispatcher sees it.
struct GroupMemberView {
  ModelId model = 0;
  bool idle = true;  // nothing of this member queued or running on the server
  const std::vector<BatchSeconds>* costs = nullptr;  // c(m, b), the member's mean batch costs
};

// What a dispatcher decides from: the group's queue, oldest first (ids, arrivals, deadlines),
// its members, and the measured accuracy of every subset of them.
struct GroupView {
  std::span<const Request> queue;
  std::span<const GroupMemberView> members;
  const EnsembleAccuracy* accuracy = nullptr;
};

// Dispatch the oldest `size` requests (at most the queue) to `members` now; size 0: nothing
// now, ask again at `wait_until` (kNever: at the next arrival or answer).
struct GroupDecision {
  uint32_t size = 0;
  MemberMask members = 0;
  Time wait_until = kNever;
};

class EnsembleDispatcher {
 public:
  virtual ~EnsembleDispatcher() = default;
  virtual GroupDecision decide(const GroupView& v, Time now) = 0;
  // Every request of a batch this dispatcher released has its final answer: the batch began
  // with request `first`, held `size` requests, went to `selected`, and `overdue` of them
  // were answered past their deadline. For learning dispatchers (Rafiki's equation 7).
  virtual void on_batch_answered(RequestId first, uint32_t size, MemberMask selected,
                                 uint32_t overdue, Time now) {}
};

// A dispatcher's maker: its spec and the group's member names (in member order).
using DispatcherFactory = std::function<std::unique_ptr<EnsembleDispatcher>(
    const PolicySpec&, std::span<const std::string> members)>;

struct EnsembleDispatcherInfo {
  std::string name;
  std::string help;               // what it does and its parameters
  std::vector<std::string> keys;  // its parameters; any other key is an error
  DispatcherFactory make;
  // Checks the parameters without making one (a config is checked before files it names
  // exist, e.g. weights a training run will write); empty: make() checks.
  std::function<void(const PolicySpec&, std::span<const std::string> members)> check;
};

// The registered dispatchers (built in: clipper, greedy), in name order.
std::vector<EnsembleDispatcherInfo> ensemble_dispatchers();
// Adds (or replaces) a dispatcher; learn::register_policies adds rafiki-rl.
void add_ensemble_dispatcher(EnsembleDispatcherInfo info);
// Makes the dispatcher `spec` names for a group of `members`. Throws ConfigError for an
// unknown name (listing the known ones), an unknown parameter key or a bad value.
std::unique_ptr<EnsembleDispatcher> make_ensemble_dispatcher(const PolicySpec& spec,
                                                             std::span<const std::string> members);

// Checks `spec` for a group of `members` as make_ensemble_dispatcher would, through the entry's
// check() when it has one. Throws ConfigError.
void check_ensemble_dispatcher(const PolicySpec& spec, std::span<const std::string> members);

// c(b) of a subset run synchronously: its slowest selected member's cost of a batch of b
// (0 when no selected member has costs).
double subset_batch_seconds(std::span<const GroupMemberView> members, MemberMask mask,
                            uint32_t b);

}  // namespace servelab
