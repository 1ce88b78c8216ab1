// The ids of a group's member requests. A request to a model group (SimulationSetup::groups)
// fans out into one member request per selected member; each is an ordinary request in its
// member model's queue, so it needs an id of its own that no workload request has. Workload
// ids are 0..n-1 (n < 2^60); member k (k < kMaxGroupMembers = 8) of group request g gets
//   2^63 | (g * 8 + k)
// so the top bit says "member", and the group request and the member index come back by a
// shift and a mask. Pure functions.
#pragma once

#include <cstdint>

#include "engine/control/ensemble.h"
#include "engine/control/types.h"

namespace servelab::sim {

constexpr RequestId kMemberRequestBit = RequestId(1) << 63;
static_assert(kMaxGroupMembers == 8, "member ids keep the member index in 3 bits");

constexpr RequestId member_request_id(RequestId group_request, uint32_t member) {
  return kMemberRequestBit | (group_request << 3) | member;
}
constexpr bool is_member_request(RequestId id) { return (id & kMemberRequestBit) != 0; }
constexpr RequestId group_request_of(RequestId member) { return (member & ~kMemberRequestBit) >> 3; }
constexpr uint32_t member_index_of(RequestId member) { return uint32_t(member & 7); }

}  // namespace servelab::sim
