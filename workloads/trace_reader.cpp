// CSV trace reading: the Azure LLM inference traces (TIMESTAMP,ContextTokens,GeneratedTokens)
// and any CSV whose first column is a timestamp or a number of seconds.
#include "workloads/trace_reader.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <stdexcept>
#include <string_view>

namespace servelab::workloads::detail {
namespace {

[[noreturn]] void fail(const std::string& path, size_t line, const std::string& what) {
  std::string where = "trace '" + path + "'";
  if (line > 0) where += " line " + std::to_string(line);
  throw std::invalid_argument(where + ": " + what);
}

// A field as a message shows it: control bytes (a NUL would end the message at every C
// boundary) as \xNN, and at most 80 bytes of it.
std::string shown(std::string_view field, size_t max = 80) {
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < field.size() && i < max; ++i) {
    const auto c = static_cast<unsigned char>(field[i]);
    if (c < 0x20 || c == 0x7f) out += std::string("\\x") + kHex[c >> 4] + kHex[c & 15];
    else out += char(c);
  }
  if (field.size() > max) out += "... (" + std::to_string(field.size()) + " bytes)";
  return out;
}

// Splits one CSV record. Quoted fields may hold commas and doubled quotes (no newlines).
std::vector<std::string> split_record(const std::string& line) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        fields.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        fields.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      fields.emplace_back();
    } else {
      fields.back() += c;
    }
  }
  for (auto& f : fields) {  // trim spaces around unquoted content
    const auto b = f.find_first_not_of(" \t");
    const auto e = f.find_last_not_of(" \t");
    f = b == std::string::npos ? std::string() : f.substr(b, e - b + 1);
  }
  return fields;
}

bool parse_int(const char* b, const char* e, long long* out) {
  auto [p, ec] = std::from_chars(b, e, *out);
  return ec == std::errc() && p == e;
}

// Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar (H. Hinnant's algorithm).
long long days_from_civil(long long y, unsigned m, unsigned d) {
  y -= m <= 2;
  const long long era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<long long>(doe) - 719468;
}

bool parse_calendar(const std::string& s, Timestamp* out) {
  // YYYY-MM-DD?hh:mm:ss[.f...] with ? one of ' ' or 'T'
  std::string t = s;
  if (!t.empty() && (t.back() == 'Z' || t.back() == 'z')) t.pop_back();
  if (t.size() < 19 || t[4] != '-' || t[7] != '-' || (t[10] != ' ' && t[10] != 'T') ||
      t[13] != ':' || t[16] != ':')
    return false;
  long long y, mo, d, h, mi, sec;
  const char* p = t.data();
  if (!parse_int(p, p + 4, &y) || !parse_int(p + 5, p + 7, &mo) || !parse_int(p + 8, p + 10, &d) ||
      !parse_int(p + 11, p + 13, &h) || !parse_int(p + 14, p + 16, &mi) ||
      !parse_int(p + 17, p + 19, &sec))
    return false;
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60) return false;
  double fraction = 0;
  if (t.size() > 19) {
    if (t[19] != '.' || t.size() == 20) return false;
    double scale = 0.1;
    for (size_t i = 20; i < t.size(); ++i) {
      if (t[i] < '0' || t[i] > '9') return false;
      fraction += (t[i] - '0') * scale;
      scale /= 10;
    }
  }
  out->whole = days_from_civil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d)) * 86400 +
               h * 3600 + mi * 60 + sec;
  out->fraction = fraction;
  out->calendar = true;
  return true;
}

}  // namespace

size_t CsvTable::column(const std::string& name) const {
  for (size_t i = 0; i < header.size(); ++i)
    if (header[i] == name) return i;
  std::string names;
  for (const auto& h : header) names.append(names.empty() ? "" : ", ").append(shown(h));
  std::string why = "no column '";
  why.append(shown(name)).append("' (columns: ").append(shown(names, 1000)).append(")");
  fail(path, 0, why);
}

CsvTable read_csv(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail(path, 0, "cannot open file");
  CsvTable table;
  table.path = path;
  std::string line;
  size_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (number == 1 && line.size() >= 3 && line.compare(0, 3, "\xEF\xBB\xBF") == 0)
      line.erase(0, 3);  // UTF-8 byte-order mark
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    auto fields = split_record(line);
    if (table.header.empty()) {
      table.header = std::move(fields);
    } else {
      table.rows.push_back(std::move(fields));
      table.line_numbers.push_back(number);
    }
  }
  if (table.header.empty()) fail(path, 0, "file is empty (a header row is expected)");
  return table;
}

bool parse_timestamp(const std::string& field, Timestamp* out) {
  if (parse_calendar(field, out)) return true;
  double v = 0;
  auto [p, ec] = std::from_chars(field.data(), field.data() + field.size(), v);
  if (ec != std::errc() || p != field.data() + field.size() || !std::isfinite(v)) return false;
  out->whole = 0;
  out->fraction = v;
  out->calendar = false;
  return true;
}

std::vector<double> read_trace_times(const std::string& path) {
  const CsvTable table = read_csv(path);
  if (table.rows.empty()) fail(path, 0, "no rows after the header");
  std::vector<Timestamp> stamps(table.rows.size());
  for (size_t i = 0; i < table.rows.size(); ++i) {
    if (!parse_timestamp(table.rows[i][0], &stamps[i]))
      fail(path, table.line_numbers[i],
           "first column '" + shown(table.rows[i][0]) +
               "' is neither a timestamp (YYYY-MM-DD hh:mm:ss.fff) nor a number of seconds");
    if (stamps[i].calendar != stamps[0].calendar)
      fail(path, table.line_numbers[i], "mixes calendar timestamps and plain seconds");
  }
  std::stable_sort(stamps.begin(), stamps.end(), [](const Timestamp& a, const Timestamp& b) {
    return a.whole != b.whole ? a.whole < b.whole : a.fraction < b.fraction;
  });
  std::vector<double> times(stamps.size());
  for (size_t i = 0; i < stamps.size(); ++i)
    times[i] = static_cast<double>(stamps[i].whole - stamps[0].whole) +
               (stamps[i].fraction - stamps[0].fraction);
  return times;
}

std::vector<std::string> read_trace_column(const std::string& path, const std::string& column) {
  const CsvTable table = read_csv(path);
  if (table.rows.empty()) fail(path, 0, "no rows after the header");
  const size_t c = table.column(column);
  std::vector<std::string> values;
  values.reserve(table.rows.size());
  for (size_t i = 0; i < table.rows.size(); ++i) {
    if (c >= table.rows[i].size())
      fail(path, table.line_numbers[i], "row has no field for column '" + shown(column) + "'");
    values.push_back(table.rows[i][c]);
  }
  return values;
}

}  // namespace servelab::workloads::detail
