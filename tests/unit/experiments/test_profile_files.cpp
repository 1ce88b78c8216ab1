// save_profile and missing_models: merging a measurement into this machine's profile file
// keeps the other models' costs and overheads; cold bursts are stored once, profile-level.
#include <catch2/catch.hpp>

#include <fstream>

#include "config/profile_yaml.h"
#include "experiments/profiler.h"
#include "tests/support/temp_dir.h"

using namespace servelab;

namespace {

// One model costing `ms` a batch of 1, with a request overhead of `before` ms.
config::ProfileFile one_model(const std::string& name, double ms, double before) {
  config::ProfileFile p;
  ModelProfile& m = p.costs.models.emplace_back();
  m.name = name;
  m.size_bytes = 1;
  m.batches = {{1, ms / 1e3, 0, {}}};
  p.front_end.overheads[name] = {before / 1e3, 0.0005, 0.0005, 0, 0};
  return p;
}

}  // namespace

TEST_CASE("saving a measurement keeps other models and replaces the bursts",
          "[experiments][profile]") {
  servelab::testutil::TempDir dir("servelab-profile-files");
  const std::string path = (dir / "p.yaml").string();
  const experiments::ProfileOptions o;

  config::ProfileFile first = one_model("a", 5, 2);
  first.front_end.cold_bursts = {{0.001, 0.002}};
  experiments::save_profile(path, first, o);
  CHECK(experiments::missing_models(path, {"a", "b"}) == std::vector<std::string>{"b"});

  config::ProfileFile second = one_model("b", 7, 3);  // no bursts measured this time
  experiments::save_profile(path, second, o);
  config::ProfileFile merged = config::load_profile_file(path);
  REQUIRE(merged.costs.names() == std::vector<std::string>{"a", "b"});
  CHECK(merged.front_end.overhead("a")->before == Approx(0.002));
  CHECK(merged.front_end.overhead("b")->before == Approx(0.003));
  CHECK(merged.front_end.cold_bursts == ColdBursts{{0.001, 0.002}});
  CHECK(experiments::missing_models(path, {"a", "b"}).empty());

  config::ProfileFile again = one_model("a", 6, 4);
  again.front_end.cold_bursts = {{0.003}};
  experiments::save_profile(path, again, o);
  merged = config::load_profile_file(path);
  CHECK(merged.costs.find("a")->batch_latency(1) == Approx(0.006));
  CHECK(merged.front_end.overhead("a")->before == Approx(0.004));
  CHECK(merged.front_end.overhead("b")->before == Approx(0.003));
  CHECK(merged.front_end.cold_bursts == ColdBursts{{0.003}});
  // Written in the new form: bursts in the top-level front_end section only.
  YAML::Node root = YAML::LoadFile(path);
  CHECK(root["front_end"]["cold_bursts_ms"].size() == 1);
  CHECK(!root["models"]["a"]["cold_bursts_ms"]);
}
