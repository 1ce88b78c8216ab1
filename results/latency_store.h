// The latencies a summary keeps for its exact percentiles, 8 bytes each. They stay in memory
// while a run's stores together hold at most a budget of values; past it, a store that
// grows moves what it holds to one temporary file shared by the run (LatencySpill) and from
// then on writes its values there in chunks. A run's memory thus stays flat however many
// requests it has (the budget, plus at most a chunk per store), and runs within the budget
// never touch the disk. The file is unlinked as soon as it is made: nothing is left behind, even
// after a crash. Single-threaded; a spill outlives the stores that use it.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "results/value_chunks.h"

namespace servelab::results {

class LatencySpill {
 public:
  // 4M values (32 MB) in memory by default.
  static constexpr size_t kDefaultBudget = size_t(4) << 20;
  // `budget`: values kept in memory by all the stores together; `dir`: where the temporary
  // file goes (empty: TMPDIR, else /tmp).
  explicit LatencySpill(size_t budget = kDefaultBudget, std::string dir = "");
  ~LatencySpill();
  LatencySpill(const LatencySpill&) = delete;
  LatencySpill& operator=(const LatencySpill&) = delete;

  size_t budget() const { return budget_; }
  uint64_t spilled() const { return end_; }  // values written to the file so far

  // Memory accounting (in values of capacity) for the stores.
  bool fits(size_t more) const { return held_ + more <= budget_; }
  size_t room() const { return held_ < budget_ ? budget_ - held_ : 0; }
  size_t held() const { return held_; }
  void hold(size_t n) { held_ += n; }
  void release(size_t n) { held_ -= n; }

  // Appends `values` to the file, made at the first call; returns where they start (in
  // values). Throws std::runtime_error naming the file's folder when it cannot be written.
  uint64_t write(std::span<const double> values);
  // Reads values [at, at + out.size()) back. Throws std::runtime_error on a read error.
  void read(uint64_t at, std::span<double> out) const;

 private:
  void open();
  size_t budget_;
  std::string dir_;
  int fd_ = -1;
  uint64_t end_ = 0;   // values in the file
  size_t held_ = 0;    // capacity the stores hold in memory
};

class LatencyStore final : public ValueChunks {
 public:
  // Values a store holds at most once it spills (512 KB), written out when full.
  static constexpr size_t kChunk = size_t(1) << 16;
  // `spill`: the run's budget and file; nullptr: always in memory.
  explicit LatencyStore(LatencySpill* spill = nullptr) : spill_(spill) {}
  ~LatencyStore() override;
  LatencyStore(LatencyStore&& o) noexcept;
  LatencyStore& operator=(LatencyStore&& o) noexcept;

  void add(double v) {
    if (memory_.size() == memory_.capacity()) [[unlikely]] make_room();
    memory_.push_back(v);
  }
  // Room for `n` values in memory at once, as far as the budget allows.
  void reserve(size_t n);

  size_t size() const override { return spilled_ + memory_.size(); }
  bool empty() const { return size() == 0; }
  void for_each(const Visit& visit) const override;
  std::span<const double> contiguous() const override {
    return chunks_.empty() ? std::span<const double>(memory_) : std::span<const double>();
  }

 private:
  struct Chunk {
    uint64_t at;
    size_t count;
  };
  void make_room();  // grow within the budget, else write out what is held
  void set_capacity(size_t n);
  void write_out();

  LatencySpill* spill_;
  std::vector<double> memory_;  // the newest values (all of them until the first spill)
  std::vector<Chunk> chunks_;   // the older ones, in the spill file, in order
  size_t spilled_ = 0;          // values in chunks_
};

}  // namespace servelab::results
