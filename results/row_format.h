// requests.csv row formatting, shared by write_requests_csv and RequestsCsvStream
// (internal to servelab_results). RowWriter is single-threaded.
#pragma once

#include <array>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "results/records.h"

namespace servelab::results::detail {

inline constexpr const char* kHeader =
    "id,model,arrival,queued,dispatch,start,finish,batch_size,waited_for_load,status";
// Optional columns after status, in this order: each request's deadline (runs with SLOs), its
// accuracy (runs with model groups or scored answers) and its backup columns (runs with
// backups).
inline constexpr const char* kDeadlineColumn = ",deadline";
inline constexpr const char* kAccuracyColumn = ",accuracy";
inline constexpr const char* kBackupColumns = ",backup_sent,won_by,copy_cancelled,wasted_s";
inline constexpr const char* kHeaderBeforeQueued =
    "id,model,arrival,dispatch,start,finish,batch_size,waited_for_load,status";

struct Columns {
  bool deadline = false;
  bool accuracy = false;
  bool backups = false;
  size_t count() const { return size_t(deadline) + accuracy + 4 * backups; }
};

inline const char* copy_name(RequestRecord::Copy c) {
  return c == RequestRecord::Copy::Primary ? "primary"
         : c == RequestRecord::Copy::Backup ? "backup" : "";
}

inline std::string header(Columns c) {
  std::string h = kHeader;
  if (c.deadline) h += kDeadlineColumn;
  if (c.accuracy) h += kAccuracyColumn;
  if (c.backups) h += kBackupColumns;
  return h;
}

struct FileCloser {
  void operator()(FILE* f) const { std::fclose(f); }
};

// t >= 0 times 10^9, rounded to the nearest integer (ties to even) as exact arithmetic does:
// t = m * 2^-shift with a 53-bit m (read from the bits), so m * 10^9 fits in 128 bits and the
// shift rounds exactly.
inline bool exact_nanoseconds(double t, uint64_t* out) {
  const auto bits = std::bit_cast<uint64_t>(t);
  const auto biased = int((bits >> 52) & 0x7ff);
  const uint64_t fraction = bits & ((uint64_t{1} << 52) - 1);
  const uint64_t m = biased ? fraction | (uint64_t{1} << 52) : fraction;
  const int shift = biased ? 1075 - biased : 1074;  // t = m / 2^shift
  if (shift <= 0) return false;  // t >= 2^53: not a time of a run
  if (shift >= 127) {
    *out = 0;
    return true;
  }
  using u128 = unsigned __int128;
  const u128 p = u128(m) * 1000000000u;
  u128 q = p >> shift;
  const u128 rem = p - (q << shift), half = u128(1) << (shift - 1);
  if (rem > half || (rem == half && (q & 1))) ++q;
  *out = static_cast<uint64_t>(q);
  return true;
}

// "00" .. "99": two digits per table read.
inline constexpr auto kDigitPairs = [] {
  std::array<char, 200> t{};
  for (int i = 0; i < 100; ++i) {
    t[2 * i] = char('0' + i / 10);
    t[2 * i + 1] = char('0' + i % 10);
  }
  return t;
}();

// Nine digits of v < 10^9, zero-padded, at out[0..8].
inline void nine_digits(uint32_t v, char* out) {
  out[8] = char('0' + v % 10);
  v /= 10;
  for (int i = 6; i >= 0; i -= 2, v /= 100) std::memcpy(out + i, &kDigitPairs[2 * (v % 100)], 2);
}

// Rows go through a fixed buffer written out in large blocks; numbers are formatted with
// std::to_chars (the same digits as printf's "%.9f", several times faster).
class RowWriter {
 public:
  explicit RowWriter(FILE* f) : f_(f) {}
  ~RowWriter() { flush(); }
  void text(std::string_view s) {
    reserve(s.size());
    std::memcpy(buf_ + used_, s.data(), s.size());
    used_ += s.size();
  }
  void ch(char c) {
    reserve(1);
    buf_[used_++] = c;
  }
  void uint(uint64_t v) {
    reserve(24);
    used_ = size_t(std::to_chars(buf_ + used_, buf_ + kSize, v).ptr - buf_);
  }
  // Seconds with nanosecond resolution and a comma; an unknown time (NaN, infinity) is an
  // empty field. The digits are printf's "%.9f": t rounded to whole nanoseconds, exactly.
  void time(double t) {
    time_field(t);
    ch(',');
  }
  // The same without the comma.
  void time_field(double t) {
    uint64_t ns;
    if (t >= 0 && t < 1e9 && exact_nanoseconds(t, &ns)) {
      reserve(32);
      used_ = size_t(std::to_chars(buf_ + used_, buf_ + kSize, ns / 1000000000).ptr - buf_);
      buf_[used_++] = '.';
      nine_digits(uint32_t(ns % 1000000000), buf_ + used_);
      used_ += 9;
    } else if (std::isfinite(t)) {
      reserve(350);  // the longest finite double in fixed notation
      used_ = size_t(std::to_chars(buf_ + used_, buf_ + kSize, t, std::chars_format::fixed, 9).ptr -
                     buf_);
    }
  }
  // The shortest digits that read back as v; NaN and infinities as an empty field.
  void number(double v) {
    if (!std::isfinite(v)) return;
    reserve(32);
    used_ = size_t(std::to_chars(buf_ + used_, buf_ + kSize, v).ptr - buf_);
  }
  void flush() {
    if (used_) std::fwrite(buf_, 1, used_, f_);
    used_ = 0;
  }

 private:
  static constexpr size_t kSize = 1 << 16;
  void reserve(size_t n) {
    if (used_ + n > kSize) flush();
  }
  FILE* f_;
  char buf_[kSize];
  size_t used_ = 0;
};

// One record as a requests.csv line (model by name, status by name), with the optional
// columns `c` (a deadline is arrival + the record's own SLO; empty without one).
inline void write_row(RowWriter& out, const RequestRecord& r,
                      const std::vector<std::string>& model_names, Columns c) {
  out.uint(r.id);
  out.ch(',');
  if (r.model < model_names.size()) out.text(model_names[r.model]);
  else out.uint(r.model);
  out.ch(',');
  out.time(r.arrival);
  out.time(r.queued);
  out.time(r.dispatch);
  out.time(r.start);
  out.time(r.finish);
  out.uint(r.batch_size);
  out.text(r.waited_for_load ? ",1," : ",0,");
  out.text(status_name(r.status));
  if (c.deadline) {
    out.ch(',');
    out.time_field(r.arrival + r.slo);
  }
  if (c.accuracy) {
    out.ch(',');
    out.number(r.accuracy);
  }
  if (c.backups) {
    out.text(r.backup_sent ? ",1," : ",0,");
    out.text(copy_name(r.won_by));
    out.text(r.copy_cancelled ? ",1," : ",0,");
    out.number(r.wasted);
  }
  out.ch('\n');
}

}  // namespace servelab::results::detail
