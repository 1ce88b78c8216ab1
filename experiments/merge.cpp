#include "experiments/merge.h"

#include <cstdio>
#include <fstream>

#include "results/records.h"

namespace servelab::experiments {
namespace fs = std::filesystem;

std::string run_name(uint32_t point, const std::string& mode, uint32_t repetition) {
  char name[64];
  std::snprintf(name, sizeof name, "p%03u-%s-r%u", point, mode.c_str(), repetition);
  return name;
}

void write_run_row(const fs::path& dir, const RunRow& row) {
  const nlohmann::json j = {{"point", row.point_id}, {"mode", row.mode},
                            {"repetition", row.repetition}, {"seed", row.seed},
                            {"dir", row.dir}, {"status", row.status},
                            {"error", row.error}, {"wall_s", row.wall_s}};
  results::write_json((dir / "run.json").string(), j);
}

namespace {

// A folder's run.json against the run it is merged as: the run it records must be that one.
void check_run_json(const nlohmann::json& r, const PlannedFolder& job, const std::string& name) {
  const auto field = [&](const char* key) {
    return r.contains(key) ? r[key].dump() : std::string("(none)");
  };
  const auto is = [&](const char* key, const nlohmann::json& v) {
    return r.contains(key) && r[key] == v;
  };
  if (is("point", job.point) && is("mode", job.mode) &&
      is("repetition", job.repetition) && is("seed", job.seed))
    return;
  const bool named = r.contains("point") && r["point"].is_number_unsigned() &&
                     r.contains("mode") && r["mode"].is_string() &&
                     r.contains("repetition") && r["repetition"].is_number_unsigned();
  const std::string held =
      named ? "runs/" + run_name(r["point"].get<uint32_t>(), r["mode"].get<std::string>(),
                                 r["repetition"].get<uint32_t>())
            : "no run of this plan";
  throw ExperimentError(
      "merge: runs/" + name + "/run.json records point " + field("point") + ", mode " +
      field("mode") + ", repetition " + field("repetition") + ", seed " + field("seed") +
      " (the run of " + held + "), not this plan's point " + std::to_string(job.point) +
      ", mode " + job.mode + ", repetition " + std::to_string(job.repetition) + ", seed " +
      std::to_string(job.seed) + ": a stale or copied folder; remove it or run its task again");
}

}  // namespace

std::vector<MergedRun> read_merged_runs(const std::vector<PlannedFolder>& plan,
                                        const fs::path& out) {
  std::vector<MergedRun> runs;
  for (const PlannedFolder& job : plan) {
    const std::string name = run_name(job.point, job.mode, job.repetition);
    const fs::path dir = out / "runs" / name;
    MergedRun m{{job.point, job.mode, job.repetition, job.seed,
                 (fs::path("runs") / name).string(), "failed", "its task did not finish", 0},
                {}};
    RunRow& row = m.row;
    std::ifstream row_in(dir / "run.json"), summary_in(dir / "summary.json");
    const nlohmann::json r = nlohmann::json::parse(row_in, nullptr, false);
    if (row_in && !r.is_discarded()) {
      check_run_json(r, job, name);
      row.status = r.value("status", "failed");
      row.error = r.value("error", "");
      row.wall_s = r.value("wall_s", 0.0);
    }
    if (row.status == "ok") m.summary = nlohmann::json::parse(summary_in, nullptr, false);
    if (row.status == "ok" && m.summary.is_discarded()) {
      row.status = "failed";
      row.error = "summary.json is missing or unreadable";
    }
    runs.push_back(std::move(m));
  }
  return runs;
}

RunOutcome index_merged_runs(const std::vector<MergedRun>& runs, ResultsIndex& index,
                             RunOutcome outcome) {
  for (const MergedRun& m : runs) {
    if (m.row.status != "ok") {
      ++outcome.failed;
      if (outcome.first_error.empty())
        outcome.first_error = fs::path(m.row.dir).filename().string() + ": " + m.row.error;
    }
    index.add_run(m.row, m.row.status == "ok" ? m.summary : nlohmann::json());
    ++outcome.runs;
  }
  return outcome;
}

}  // namespace servelab::experiments
