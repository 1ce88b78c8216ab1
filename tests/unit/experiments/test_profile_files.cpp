// save_profile and missing_models: merging a measurement into this machine's profile file
// keeps the other models' costs and overheads; cold bursts are stored once, profile-level.
#include <catch2/catch.hpp>

#include <fstream>

#include "config/profile_yaml.h"
#include "calibration/profiler.h"
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
  p.front_end.overheads[name] = {before / 1e3, 0.0005, 0.0005, 0, 0, ""};
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

TEST_CASE("a model's overheads measured with another request image are stale",
          "[experiments][profile]") {
  servelab::testutil::TempDir dir("servelab-profile-image");
  const std::string path = (dir / "p.yaml").string();
  config::ProfileFile p = one_model("digits", 1, 0.8);
  p.front_end.overheads["digits"].image = "images/digits/000_5.png";
  config::ProfileFile old = one_model("squeeze", 5, 1.1);  // an entry that names no image
  p.costs.models.push_back(old.costs.models[0]);
  p.front_end.overheads["squeeze"] = old.front_end.overheads["squeeze"];
  p.front_end.cold_bursts = {{0.001}};
  experiments::save_profile(path, p, experiments::ProfileOptions{});

  // The image is written beside the overheads and read back.
  CHECK(YAML::LoadFile(path)["models"]["digits"]["request_image"].as<std::string>() ==
        "images/digits/000_5.png");
  CHECK(config::load_profile_file(path).front_end.overhead("digits")->image ==
        "images/digits/000_5.png");
  const std::vector<std::string> both = {"digits", "squeeze"};
  CHECK(experiments::missing_models(path, both).empty());  // no image asked: as before
  CHECK(experiments::missing_models(path, both, "images/digits/000_5.png") ==
        std::vector<std::string>{"squeeze"});
  // An entry without an image was measured with the default one.
  CHECK(experiments::missing_models(path, both, "images/gradient.jpg") ==
        std::vector<std::string>{"digits"});
}

TEST_CASE("a profile names its request image relative to the models folder",
          "[experiments][profile]") {
  servelab::testutil::TempDir dir("servelab-profile-image-name");
  const std::string models = (dir / "models").string();
  CHECK(experiments::profile_image_name("", models) == "images/gradient.jpg");
  CHECK(experiments::profile_image_name(models + "/images/digits/1.png", models) ==
        "images/digits/1.png");
  CHECK(experiments::profile_image_name(models + "/./images/../images/a.jpg", models) ==
        "images/a.jpg");
  const std::string outside = (dir / "elsewhere" / "b.png").string();
  CHECK(experiments::profile_image_name(outside, models) == outside);
}
