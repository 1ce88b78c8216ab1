// Reading request traces from CSV files (private to servelab_workloads).
// Errors become std::invalid_argument naming the file, line and column. Thread-compatible.
#pragma once

#include <string>
#include <vector>

namespace servelab::workloads::detail {

// A CSV file with a header row: column names and the rows' fields as text. Fields may be
// quoted ("a,b" and "" escapes); blank lines are skipped; CRLF line ends are accepted.
struct CsvTable {
  std::string path;
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::vector<size_t> line_numbers;  // 1-based file line of each row, for messages

  // Index of the named column; throws listing the available columns when absent.
  size_t column(const std::string& name) const;
};

// Reads `path` (throws if it cannot be opened or has no header).
CsvTable read_csv(const std::string& path);

// Parses a timestamp field into seconds since an arbitrary epoch, as whole seconds plus a
// fraction so that differences keep sub-microsecond precision. Accepts
// "YYYY-MM-DD hh:mm:ss[.fraction]" (a 'T' may replace the space, a trailing 'Z' is ignored)
// or a plain decimal number of seconds. Returns false if the field is neither.
struct Timestamp {
  long long whole = 0;   // seconds
  double fraction = 0;   // [0, 1) for calendar times; any value for plain numbers
  bool calendar = false; // parsed from a date and time rather than a number
};
bool parse_timestamp(const std::string& field, Timestamp* out);

// Arrival times from the first column of a trace: parsed, stably sorted, and made relative to
// the earliest row (which becomes 0). Throws on an empty trace or an unparsable field.
std::vector<double> read_trace_times(const std::string& path);

// The given column of every row, in file order.
std::vector<std::string> read_trace_column(const std::string& path, const std::string& column);

}  // namespace servelab::workloads::detail
