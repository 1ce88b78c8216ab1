// requests.csv and JSON file I/O (format in results/records.h).
#include <algorithm>
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
#include "results/row_format.h"

namespace servelab::results {

namespace {

using namespace detail;

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

// A number, or NaN for an empty field; `what` names it in errors.
double parse_number(const std::string& s, const std::string& path, size_t line_no,
                    const char* what = "time") {
  if (s.empty()) return std::numeric_limits<double>::quiet_NaN();
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(s.c_str(), &end);
  if (*end != '\0' || errno) bad_line(path, line_no, std::string("bad ") + what + " '" + s + "'");
  return v;
}

uint64_t parse_uint(const std::string& s, const std::string& path, size_t line_no) {
  char* end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || errno) bad_line(path, line_no, "bad integer '" + s + "'");
  return v;
}

// backup_sent, won_by, copy_cancelled, wasted_s (four fields from `f`).
void read_backup_columns(const std::string* f, const std::string& path, size_t line_no,
                         RequestRecord& r) {
  r.backup_sent = f[0] == "1";
  if (f[1] == "primary") r.won_by = RequestRecord::Copy::Primary;
  else if (f[1] == "backup") r.won_by = RequestRecord::Copy::Backup;
  else if (!f[1].empty()) bad_line(path, line_no, "unknown copy '" + f[1] + "'");
  r.copy_cancelled = f[2] == "1";
  r.wasted = parse_number(f[3], path, line_no, "wasted_s");
}

}  // namespace

void write_requests_csv(const std::string& path, const RunRecords& run) {
  std::unique_ptr<FILE, FileCloser> f(std::fopen(path.c_str(), "wb"));
  if (!f) throw std::runtime_error("cannot write " + path + ": " + std::strerror(errno));
  {
    const auto& rs = run.requests;
    auto any_known = [&rs](double RequestRecord::*field) {
      return std::any_of(rs.begin(), rs.end(),
                         [field](const RequestRecord& r) { return !std::isnan(r.*field); });
    };
    const Columns columns{any_known(&RequestRecord::slo), any_known(&RequestRecord::accuracy),
                          run.backups};
    auto out = std::make_unique<RowWriter>(f.get());
    out->text(header(columns));
    out->ch('\n');
    for (const RequestRecord& r : rs) write_row(*out, r, run.model_names, columns);
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
  Columns columns;
  bool has_queued = false;
  for (int bits = 0; bits < 8; ++bits) {
    const Columns c{(bits & 1) != 0, (bits & 2) != 0, (bits & 4) != 0};
    if (got_line && line == header(c)) columns = c, has_queued = true;
  }
  if (!has_queued && !(got_line && line == kHeaderBeforeQueued)) {
    throw std::runtime_error(path + ": not a requests.csv (expected header '" +
                             std::string(kHeader) + "')");
  }
  RunRecords run;
  run.backups = columns.backups;
  std::unordered_map<std::string, uint32_t> model_index;
  size_t line_no = 1;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.empty()) continue;
    std::vector<std::string> f = split(line);
    const size_t fields = (has_queued ? 10 : 9) + columns.count();
    if (f.size() != fields)
      bad_line(path, line_no, "expected " + std::to_string(fields) + " fields, got " +
                                  std::to_string(f.size()));
    if (!has_queued) f.insert(f.begin() + 3, "");  // queued unknown
    RequestRecord r;
    r.id = parse_uint(f[0], path, line_no);
    auto [it, inserted] = model_index.emplace(f[1], uint32_t(run.model_names.size()));
    if (inserted) run.model_names.push_back(f[1]);
    r.model = it->second;
    r.arrival = parse_number(f[2], path, line_no);
    r.queued = parse_number(f[3], path, line_no);
    r.dispatch = parse_number(f[4], path, line_no);
    r.start = parse_number(f[5], path, line_no);
    r.finish = parse_number(f[6], path, line_no);
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
    size_t next = 10;
    if (columns.deadline) r.slo = parse_number(f[next++], path, line_no, "deadline") - r.arrival;
    if (columns.accuracy) r.accuracy = parse_number(f[next++], path, line_no, "accuracy");
    if (columns.backups) read_backup_columns(&f[next], path, line_no, r);
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
