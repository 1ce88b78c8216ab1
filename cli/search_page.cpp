#include "cli/search_page.h"

#include <cstdio>

namespace servelab::cli {

std::string table_cell(const nlohmann::json& v) {
  if (!v.is_number()) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v.get<double>());
  return buf;
}

std::string measured_table(const nlohmann::json& rows) {
  std::string md = "\n| measured on the engine | throughput predicted | measured | error | "
                   "p99 (ms) predicted | measured | error | constraints met |\n"
                   "|---|---|---|---|---|---|---|---|\n";
  for (const auto& r : rows) {
    md += "| " + r["label"].get<std::string>();
    for (const char* m : {"throughput_rps", "latency_p99_ms"})
      md += " | " + table_cell(r["predicted"].value(m, nlohmann::json())) + " | " +
            table_cell(r["measured"].value(m, nlohmann::json())) + " | " +
            table_cell(r.value("error", nlohmann::json::object()).value(m, nlohmann::json()));
    md += std::string(" | ") + (r["constraints_met"].get<bool>() ? "yes" : "no") + " |\n";
  }
  return md;
}

}  // namespace servelab::cli
