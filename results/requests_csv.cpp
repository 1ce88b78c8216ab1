// requests.csv and JSON file I/O (format in results/records.h).
#include <array>
#include <bit>
#include <charconv>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <unordered_map>

#include "results/records.h"

namespace servelab::results {

namespace {

constexpr const char* kHeader =
    "id,model,arrival,queued,dispatch,start,finish,batch_size,waited_for_load,status";
constexpr const char* kHeaderBeforeQueued =
    "id,model,arrival,dispatch,start,finish,batch_size,waited_for_load,status";

struct FileCloser {
  void operator()(FILE* f) const { std::fclose(f); }
};

// t >= 0 times 10^9, rounded to the nearest integer (ties to even) as exact arithmetic does:
// t = m * 2^-shift with a 53-bit m (read from the bits), so m * 10^9 fits in 128 bits and the
// shift rounds exactly.
bool exact_nanoseconds(double t, uint64_t* out) {
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
constexpr auto kDigitPairs = [] {
  std::array<char, 200> t{};
  for (int i = 0; i < 100; ++i) {
    t[2 * i] = char('0' + i / 10);
    t[2 * i + 1] = char('0' + i % 10);
  }
  return t;
}();

// Nine digits of v < 10^9, zero-padded, at out[0..8].
void nine_digits(uint32_t v, char* out) {
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
    ch(',');
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

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> out;
  size_t begin = 0;
  while (true) {
    size_t comma = line.find(',', begin);
    out.push_back(line.substr(begin, comma - begin));
    if (comma == std::string::npos) break;
    begin = comma + 1;
  }
  return out;
}

[[noreturn]] void bad_line(const std::string& path, size_t line_no, const std::string& what) {
  throw std::runtime_error(path + ":" + std::to_string(line_no) + ": " + what);
}

double parse_time(const std::string& s, const std::string& path, size_t line_no) {
  if (s.empty()) return std::numeric_limits<double>::quiet_NaN();
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(s.c_str(), &end);
  if (*end != '\0' || errno) bad_line(path, line_no, "bad time '" + s + "'");
  return v;
}

uint64_t parse_uint(const std::string& s, const std::string& path, size_t line_no) {
  char* end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || errno) bad_line(path, line_no, "bad integer '" + s + "'");
  return v;
}

}  // namespace

void write_requests_csv(const std::string& path, const RunRecords& run) {
  std::unique_ptr<FILE, FileCloser> f(std::fopen(path.c_str(), "wb"));
  if (!f) throw std::runtime_error("cannot write " + path + ": " + std::strerror(errno));
  {
    auto out = std::make_unique<RowWriter>(f.get());
    out->text(kHeader);
    out->ch('\n');
    for (const RequestRecord& r : run.requests) {
      out->uint(r.id);
      out->ch(',');
      if (r.model < run.model_names.size()) out->text(run.model_names[r.model]);
      else out->uint(r.model);
      out->ch(',');
      out->time(r.arrival);
      out->time(r.queued);
      out->time(r.dispatch);
      out->time(r.start);
      out->time(r.finish);
      out->uint(r.batch_size);
      out->text(r.waited_for_load ? ",1," : ",0,");
      out->text(status_name(r.status));
      out->ch('\n');
    }
  }
  if (std::ferror(f.get()) || std::fflush(f.get()) != 0) {
    throw std::runtime_error("error writing " + path + ": " + std::strerror(errno));
  }
}

RunRecords read_requests_csv(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path + ": " + std::strerror(errno));
  std::string line;
  const bool got_line = static_cast<bool>(std::getline(in, line));
  const bool has_queued = got_line && line == kHeader;
  if (!has_queued && !(got_line && line == kHeaderBeforeQueued)) {
    throw std::runtime_error(path + ": not a requests.csv (expected header '" +
                             std::string(kHeader) + "')");
  }
  RunRecords run;
  std::unordered_map<std::string, uint32_t> model_index;
  size_t line_no = 1;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.empty()) continue;
    std::vector<std::string> f = split(line);
    const size_t fields = has_queued ? 10 : 9;
    if (f.size() != fields)
      bad_line(path, line_no, "expected " + std::to_string(fields) + " fields, got " +
                                  std::to_string(f.size()));
    if (!has_queued) f.insert(f.begin() + 3, "");  // queued unknown
    RequestRecord r;
    r.id = parse_uint(f[0], path, line_no);
    auto [it, inserted] = model_index.emplace(f[1], uint32_t(run.model_names.size()));
    if (inserted) run.model_names.push_back(f[1]);
    r.model = it->second;
    r.arrival = parse_time(f[2], path, line_no);
    r.queued = parse_time(f[3], path, line_no);
    r.dispatch = parse_time(f[4], path, line_no);
    r.start = parse_time(f[5], path, line_no);
    r.finish = parse_time(f[6], path, line_no);
    r.batch_size = static_cast<uint32_t>(parse_uint(f[7], path, line_no));
    r.waited_for_load = f[8] == "1";
    bool known = false;
    for (auto s : {RequestStatus::Ok, RequestStatus::Timeout, RequestStatus::Rejected,
                   RequestStatus::Failed, RequestStatus::Cancelled, RequestStatus::Dropped}) {
      if (f[9] == status_name(s)) {
        r.status = s;
        known = true;
      }
    }
    if (!known) bad_line(path, line_no, "unknown status '" + f[9] + "'");
    run.requests.push_back(r);
  }
  return run;
}

void write_json(const std::string& path, const nlohmann::json& j) {
  std::ofstream out(path);
  if (!out) throw std::runtime_error("cannot write " + path + ": " + std::strerror(errno));
  out << j.dump(2) << "\n";
  if (!out) throw std::runtime_error("error writing " + path);
}

}  // namespace servelab::results
