#include "engine/control/shared_parts.h"

#include <cassert>

namespace servelab {

uint64_t SharedParts::own_bytes(const ModelInfo& m) {
  uint64_t parts = 0;
  for (const WeightPart& p : m.host_parts) parts += p.bytes;
  return m.size_bytes > parts ? m.size_bytes - parts : 0;
}

uint64_t SharedParts::charge_of(const ModelInfo& m) const {
  if (m.host_parts.empty()) return m.size_bytes;
  uint64_t bytes = own_bytes(m);
  for (const WeightPart& p : m.host_parts)
    if (!held_.count(p.key)) bytes += p.bytes;
  return bytes;
}

uint64_t SharedParts::freed_by(const ModelInfo& m) const {
  if (m.host_parts.empty()) return m.size_bytes;
  uint64_t bytes = own_bytes(m);
  for (const WeightPart& p : m.host_parts) {
    auto it = held_.find(p.key);
    if (it != held_.end() && it->second.users == 1) bytes += p.bytes;
  }
  return bytes;
}

std::unordered_map<uint64_t, uint32_t> SharedParts::users_among(
    std::span<const ModelInfo* const> dropped) const {
  std::unordered_map<uint64_t, uint32_t> users;
  for (const ModelInfo* m : dropped)
    for (const WeightPart& p : m->host_parts) ++users[p.key];
  return users;
}

uint64_t SharedParts::freed_by_all(std::span<const ModelInfo* const> dropped) const {
  uint64_t bytes = 0;
  for (const ModelInfo* m : dropped) bytes += m->host_parts.empty() ? m->size_bytes : own_bytes(*m);
  if (held_.empty()) return bytes;
  for (const auto& [key, n] : users_among(dropped)) {
    auto it = held_.find(key);
    if (it != held_.end() && it->second.users == n) bytes += it->second.bytes;
  }
  return bytes;
}

uint64_t SharedParts::charge_after(const ModelInfo& m,
                                   std::span<const ModelInfo* const> dropped) const {
  if (m.host_parts.empty() || held_.empty()) return charge_of(m);
  const auto users = users_among(dropped);
  uint64_t bytes = own_bytes(m);
  for (const WeightPart& p : m.host_parts) {
    auto it = held_.find(p.key);
    auto d = users.find(p.key);
    const uint32_t left = it == held_.end() ? 0 : it->second.users - (d == users.end() ? 0 : d->second);
    if (left == 0) bytes += p.bytes;
  }
  return bytes;
}

uint64_t SharedParts::hold(const ModelInfo& m) {
  const uint64_t added = charge_of(m);
  for (const WeightPart& p : m.host_parts) {
    Held& h = held_[p.key];
    h.bytes = p.bytes;
    ++h.users;
  }
  return added;
}

uint64_t SharedParts::drop(const ModelInfo& m) {
  const uint64_t freed = freed_by(m);
  for (const WeightPart& p : m.host_parts) {
    auto it = held_.find(p.key);
    assert(it != held_.end() && "dropping a part that is not held");
    if (it == held_.end()) continue;
    if (--it->second.users == 0) held_.erase(it);
  }
  return freed;
}

}  // namespace servelab
