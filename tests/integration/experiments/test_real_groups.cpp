// Real mode with a model group (issue 15): the in-process server defines the config's group,
// the load generator sends the labelled digits images (workload.images) and the summary's
// "accuracy" is the fraction of answers that named the true label. The truth is computed
// here independently: each image classified on each member directly, then Rafiki's vote.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "engine/server/http_server.h"
#include "experiments/backends.h"
#include "experiments/experiment.h"
#include "calibration/profiler.h"
#include "experiments/runner.h"
#include "tests/integration/server/http_client.h"
#include "tests/support/temp_dir.h"
#include "workloads/loadgen/loadgen.h"

using namespace servelab;
namespace ex = servelab::experiments;
namespace fs = std::filesystem;

namespace {

const std::string kModels = std::string(SERVELAB_SOURCE_DIR) + "/models";
const std::vector<std::string> kMembers = {"digits_linear", "digits_mlp", "digits_cnn_small"};
constexpr size_t kRequests = 60;

nlohmann::json read_json(const fs::path& p) {
  std::ifstream in(p);
  return nlohmann::json::parse(in);
}

// Each member's top-1 label for the first kRequests images, asked of a server of its own.
std::map<std::string, std::vector<std::string>> member_labels(
    const std::vector<loadgen::LabelledBody>& images) {
  runtime::EngineOptions eo;
  eo.executor = "torch";
  eo.device = "cpu";
  server::ServerOptions so;
  servelab::testutil::TempDir store("servelab-real-groups-store");
  so.store_dir = store.path().string();
  so.log = false;
  server::HttpServer srv(so, eo);
  srv.start();
  servelab::testing::HttpClient client(srv.port());
  std::map<std::string, std::vector<std::string>> out;
  for (const std::string& m : kMembers) {
    runtime::ModelSpec spec;
    spec.name = m;
    spec.file = kModels + "/" + m + ".pt";
    spec.preprocess.input_width = spec.preprocess.input_height = 8;
    spec.preprocess.resize = 0;
    for (int c = 0; c < 3; ++c) spec.preprocess.mean[c] = 0, spec.preprocess.std[c] = 1;
    srv.engine().register_model(spec);  // labels: indices "0".."9", as the labels files say
    for (size_t i = 0; i < kRequests; ++i) {
      const auto& img = images[i % images.size()];
      auto r = client.request("POST", "/classify/" + m, img.body, img.content_type);
      REQUIRE(r.status == 200);
      out[m].push_back(nlohmann::json::parse(r.body)["top"][0]["label"].get<std::string>());
    }
  }
  srv.stop();
  return out;
}

// Rafiki's vote, written out here: the most frequent label; a tie goes to the tied label of
// the most accurate member.
std::string vote(const std::vector<std::string>& labels, const std::vector<double>& accuracy) {
  std::map<std::string, int> count;
  for (const auto& l : labels) ++count[l];
  int top = 0;
  for (const auto& [l, n] : count) top = std::max(top, n);
  size_t best = labels.size();
  for (size_t k = 0; k < labels.size(); ++k)
    if (count[labels[k]] == top && (best == labels.size() || accuracy[k] > accuracy[best])) best = k;
  return labels[best];
}

}  // namespace

TEST_CASE("real mode with a group scores its votes against the image labels",
          "[experiments][real][groups]") {
  servelab::testutil::TempDir tmp_dir("servelab-real-groups");
  const fs::path dir = tmp_dir.path();
  const std::string images_dir = kModels + "/images/digits";
  const auto images = loadgen::read_labelled_images(images_dir);
  REQUIRE(images.size() >= kRequests);
  const auto table = read_json(kModels + "/digits-ensembles.json");
  std::vector<double> accuracy;
  for (const auto& m : kMembers) accuracy.push_back(table["models"][m].get<double>());

  const std::string profile = (dir / "profile.yaml").string();

  ex::ExperimentSpec spec = ex::parse_experiment(YAML::Load(R"(
name: real-groups-test
modes: [real]
sweep:
  groups.ens.subset: [all, {name: fixed, members: [digits_linear]}]
models: [digits_linear, digits_mlp, digits_cnn_small]
groups:
  ens:
    members: [digits_linear, digits_mlp, digits_cnn_small]
    accuracy_table: )" + kModels + R"(/digits-ensembles.json
engine: {workers: 1, max_batch: 8}
workload:
  requests: 60
  images: images/digits
  arrival: {type: closed, concurrency: 2}
  access: {type: weights, weights: [0, 0, 0, 1]}
)"), (dir / "experiment.yaml").string());
  ex::ProfileOptions probe;
  probe.models_dir = kModels;
  probe.models = kMembers;
  probe.batch_sizes = {1, 2};
  probe.batches.samples = 3;
  probe.batches.min_seconds_per_size = 0.02;
  probe.batches.max_seconds_per_size = 0.2;
  probe.load_samples = 2;
  probe.min_load_seconds = 0;
  probe.course_seconds = 0.1;
  probe.idle_seconds = 0;
  probe.served_rounds = 0;
  probe.served_idle_turns = 0;
  probe.served_miss_requests = 0;
  probe.overhead_requests = 10;
  probe.cold_burst_sizes = {2};
  probe.cold_bursts = 1;
  // The members' overheads are measured with the image the requests carry: the first digit
  // (as real mode's prepare asks; it would measure them again with another).
  probe.image = ex::request_image_of(spec.doc, kModels);
  CHECK(probe.image == kModels + "/images/digits/000_5.png");
  ex::ensure_profile_with(profile, probe);
  CHECK(ex::missing_models(profile, kMembers, "images/digits/000_5.png").empty());
  CHECK(ex::missing_models(profile, kMembers, "images/gradient.jpg") == kMembers);
  auto real = ex::make_real_backend({"", kModels, profile, dir.string(), "", false});
  ex::RunOptions ro;
  ro.out_dir = (dir / "out").string();
  ro.quiet = true;
  ex::RunOutcome out = ex::run_experiment(spec, ro, {{"real", real.get()}});
  REQUIRE(out.failed == 0);
  REQUIRE(out.runs == 2);

  const auto labels = member_labels(images);
  size_t right_all = 0, right_linear = 0;
  for (size_t i = 0; i < kRequests; ++i) {
    std::vector<std::string> answers;
    for (const auto& m : kMembers) answers.push_back(labels.at(m)[i]);
    right_all += vote(answers, accuracy) == images[i].label;
    right_linear += labels.at("digits_linear")[i] == images[i].label;
  }
  // The members disagree on some images, else the test would not tell the policies apart.
  CHECK(right_all != right_linear);

  const fs::path runs = dir / "out" / "runs";
  for (const auto& [point, right] :
       std::vector<std::pair<std::string, size_t>>{{"p000", right_all}, {"p001", right_linear}}) {
    CAPTURE(point);
    const auto summary = read_json(runs / (point + "-real-r0") / "summary.json");
    REQUIRE(summary["completed"] == kRequests);
    CHECK(summary["accuracy_requests"] == kRequests);
    CHECK(summary["accuracy"].get<double>() == Approx(double(right) / kRequests).epsilon(1e-12));
    CHECK(summary["per_model"]["ens"]["accuracy"].get<double>() ==
          Approx(double(right) / kRequests).epsilon(1e-12));
  }
}

TEST_CASE("workload.images is checked when a real run starts", "[experiments][real][groups]") {
  servelab::testutil::TempDir tmp_dir("servelab-real-groups-bad");
  const fs::path dir = tmp_dir.path();
  fs::create_directories(dir / "imgs");
  std::ofstream(dir / "imgs" / "labels.txt") << "a.gif 3\n";
  CHECK_THROWS_WITH(loadgen::read_labelled_images((dir / "imgs").string()),
                    Catch::Contains("labels.txt:1") && Catch::Contains("not a .png or .jpg"));
  std::ofstream(dir / "imgs" / "labels.txt") << "# only a comment\n";
  CHECK_THROWS_WITH(loadgen::read_labelled_images((dir / "imgs").string()),
                    Catch::Contains("lists no images"));
  std::ofstream(dir / "imgs" / "labels.txt") << "missing.png 3\n";
  CHECK_THROWS_WITH(loadgen::read_labelled_images((dir / "imgs").string()),
                    Catch::Contains("cannot read the image 'missing.png'"));
  CHECK_THROWS_WITH(loadgen::read_labelled_images((dir / "nowhere").string()),
                    Catch::Contains("cannot read"));
  CHECK(loadgen::answer_label(R"({"group":"g","label":"7"})") == std::optional<std::string>("7"));
  CHECK(loadgen::answer_label(R"({"model":"m","top":[{"label":"4","score":0.9}]})") ==
        std::optional<std::string>("4"));
  CHECK_FALSE(loadgen::answer_label(R"({"error":"x"})").has_value());
}
