// Pieces of `servelab search`'s page (DIR/search.md) that are plain functions of search.json.
// Pure; thread-safe.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace servelab::cli {

// A number as a table shows it (4 significant digits); "-" when `v` is no number.
std::string table_cell(const nlohmann::json& v);

// The measured best K (search.json's "measured": label, predicted, measured, error,
// constraints_met per row) as a Markdown table: throughput and p99 each predicted, measured
// and the relative error (predicted / measured - 1) side by side.
std::string measured_table(const nlohmann::json& rows);

}  // namespace servelab::cli
