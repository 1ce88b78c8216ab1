// Eviction policies. Each keeps per-model bookkeeping in a dense ModelId-indexed table and
// picks among the candidates the controller passes (already filtered to evictable models);
// ties go to the first candidate, i.e. the lowest ModelId.
//   lru:  least recently loaded or accessed.
//   lfu:  least frequently accessed (TrIMS's LCU), ties by LRU.
//   fifo: loaded longest ago.
//   gds:  GreedyDual-Size (Cao and Irani, 1997): the least reload cost per byte, aged.
//   gdsf: GreedyDual-Size-Frequency (Cherkasova, 1998): gds weighted by uses since the load.
#include <algorithm>
#include <vector>

#include "engine/control/policies/builtin.h"

namespace servelab::detail {
namespace {

struct Usage {
  uint64_t last_use = 0;  // event sequence number of the last load or access
  uint64_t loaded = 0;    // event sequence number of the load
  uint64_t accesses = 0;
};

class TableEviction : public EvictionPolicy {
 public:
  void on_load(ModelId m, Time) override {
    Usage& u = at(m);
    u.last_use = u.loaded = ++seq_;
  }
  void on_access(ModelId m, Time) override {
    Usage& u = at(m);
    u.last_use = ++seq_;
    ++u.accesses;
  }
  void on_unload(ModelId m, Time) override {
    Usage& u = at(m);
    if (!keep_counts_) u.accesses = 0;
  }
  size_t pick_victim(std::span<const EvictionCandidate> c, Time) override {
    size_t best = 0;
    for (size_t i = 1; i < c.size(); ++i)
      if (before(peek(c[i].model), peek(c[best].model))) best = i;
    return best;
  }

 protected:
  explicit TableEviction(bool keep_counts = false) : keep_counts_(keep_counts) {}
  // True when a should be evicted before b.
  virtual bool before(const Usage& a, const Usage& b) const = 0;

 private:
  Usage& at(ModelId m) {
    if (m >= table_.size()) table_.resize(size_t(m) + 1);
    return table_[m];
  }
  // Read-only lookup (never grows the table, so references stay valid); unseen: all zero.
  Usage peek(ModelId m) const { return m < table_.size() ? table_[m] : Usage{}; }
  std::vector<Usage> table_;
  uint64_t seq_ = 0;
  bool keep_counts_;
};

class Lru final : public TableEviction {
  bool before(const Usage& a, const Usage& b) const override { return a.last_use < b.last_use; }
};

class Lfu final : public TableEviction {
 public:
  explicit Lfu(bool keep_counts) : TableEviction(keep_counts) {}
  bool before(const Usage& a, const Usage& b) const override {
    return a.accesses != b.accesses ? a.accesses < b.accesses : a.last_use < b.last_use;
  }
};

class Fifo final : public TableEviction {
  bool before(const Usage& a, const Usage& b) const override { return a.loaded < b.loaded; }
};

// GreedyDual-Size: each model carries H = L + F * cost / size, set when it is loaded or used,
// where cost is the candidate's reload time (1 s when unknown, which makes it size-aware only),
// L the H of the last victim, and F 1 (gds) or, with `frequency` (gdsf), the model's uses
// since it was loaded, the load included. The least H goes. Cheap-to-reload, large, rarely
// used models go first, and the rising L ages models that are no longer used. Ties: the first
// candidate (lowest ModelId).
class GreedyDualSize final : public EvictionPolicy {
 public:
  explicit GreedyDualSize(bool frequency) : frequency_(frequency) {}
  void on_load(ModelId m, Time) override {
    base(m) = inflation_;
    uses_[m] = 1;
  }
  void on_access(ModelId m, Time) override {
    base(m) = inflation_;
    ++uses_[m];
  }
  void on_unload(ModelId m, Time) override {
    base(m);  // grows the tables
    uses_[m] = 0;
  }
  size_t pick_victim(std::span<const EvictionCandidate> c, Time) override {
    size_t best = 0;
    double best_h = h(c[0]);
    for (size_t i = 1; i < c.size(); ++i) {
      double v = h(c[i]);
      if (v < best_h) best = i, best_h = v;
    }
    inflation_ = best_h;
    return best;
  }

 private:
  double& base(ModelId m) {  // grows both tables
    if (m >= base_.size()) {
      base_.resize(size_t(m) + 1, 0);
      uses_.resize(size_t(m) + 1, 0);
    }
    return base_[m];
  }
  double h(const EvictionCandidate& c) const {
    double cost = c.reload_seconds > 0 ? c.reload_seconds : 1.0;
    double at = c.model < base_.size() ? base_[c.model] : 0;
    double f = frequency_ && c.model < uses_.size() ? double(std::max<uint64_t>(uses_[c.model], 1))
                                                    : 1.0;
    return at + f * cost / double(std::max<uint64_t>(c.size_bytes, 1));
  }
  bool frequency_;
  std::vector<double> base_;    // L when the model was last loaded or used
  std::vector<uint64_t> uses_;  // gdsf's F: uses since the load, the load included
  double inflation_ = 0;        // L: H of the last victim
};

}  // namespace

void add_builtin_eviction(PolicyTables& t) {
  t.eviction["lru"] = {"Evict the least recently used model (last load or batch). No parameters.",
                       [](const PolicyParams& p) {
                         check_keys(p, {});
                         return std::make_unique<Lru>();
                       }};
  t.eviction["lfu"] = {
      "Evict the least frequently used model (TrIMS LCU): fewest batches, ties by least "
      "recently used. keep_counts (bool, default false): keep a model's count across "
      "evictions instead of restarting it at each load.",
      [](const PolicyParams& p) {
        check_keys(p, {"keep_counts"});
        return std::make_unique<Lfu>(p.get_bool("keep_counts", false));
      }};
  t.eviction["gds"] = {
      "GreedyDual-Size (Cao and Irani): evict the least H = L + reload_seconds / size_bytes, "
      "H set at each load or use, L the last victim's H; size- and load-cost-aware. No "
      "parameters.",
      [](const PolicyParams& p) {
        check_keys(p, {});
        return std::make_unique<GreedyDualSize>(false);
      }};
  t.eviction["gdsf"] = {
      "GreedyDual-Size-Frequency (Cherkasova): evict the least H = L + F * reload_seconds / "
      "size_bytes, F the model's uses since its load (the load counts one), H set at each "
      "load or use, L the last victim's H. No parameters.",
      [](const PolicyParams& p) {
        check_keys(p, {});
        return std::make_unique<GreedyDualSize>(true);
      }};
  t.eviction["fifo"] = {"Evict the model loaded longest ago. No parameters.",
                        [](const PolicyParams& p) {
                          check_keys(p, {});
                          return std::make_unique<Fifo>();
                        }};
}

}  // namespace servelab::detail
