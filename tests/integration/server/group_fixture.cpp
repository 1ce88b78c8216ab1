// Helpers of the model-group tests (group_fixture.h).
#include "tests/integration/server/group_fixture.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>

#include "tests/integration/server/server_fixture.h"
#include "tests/integration/server/test_images.h"

namespace servelab::testing {
using nlohmann::json;
namespace fs = std::filesystem;

const std::vector<std::string> kDigits = {"digits_linear", "digits_mlp", "digits_cnn"};

void register_digits(HttpClient& c) {
  for (const std::string& m : kDigits) {
    INFO("digits models missing in models/: bash scripts/make-models --tiny (needs sklearn)");
    REQUIRE(fs::exists(models_dir() + "/" + m + ".pt"));
    auto r = c.post_json("/register", register_json(m, m));
    INFO(r.body);
    REQUIRE(r.status == 201);
  }
}

double manifest_accuracy(const std::string& model) {
  return json::parse(read_file(models_dir() + "/" + model + ".json"))["accuracy"].get<double>();
}

json group_body(const std::string& name, const std::vector<std::string>& members,
                const json& subset) {
  json acc = json::object();
  for (const std::string& m : members) acc[m] = manifest_accuracy(m);
  return {{"name", name}, {"members", members}, {"accuracy", acc}, {"subset", subset}};
}

std::string top1(HttpClient& c, const std::string& model, const std::string& image) {
  auto r = c.request("POST", "/classify/" + model + "?top_k=1", image, "image/png");
  INFO(model << ": " << r.body);
  REQUIRE(r.status == 200);
  return json::parse(r.body)["top"][0]["label"].get<std::string>();
}

// Written apart from the server's vote (engine/control/ensemble.cpp), on purpose.
std::string expected_vote(const std::vector<std::string>& labels, const std::vector<double>& acc) {
  std::string best;
  long best_votes = 0;
  double best_acc = -1;
  for (size_t i = 0; i < labels.size(); ++i) {
    long votes = std::count(labels.begin(), labels.end(), labels[i]);
    double a = 0;
    for (size_t j = 0; j < labels.size(); ++j)
      if (labels[j] == labels[i]) a = std::max(a, acc[j]);
    if (votes > best_votes || (votes == best_votes && a > best_acc)) {
      best = labels[i], best_votes = votes, best_acc = a;
    }
  }
  return best;
}

std::vector<std::string> sample_images() {
  std::vector<std::string> out;
  for (int d = 0; d < 10; ++d) out.push_back(read_file(image_file("digit_" + std::to_string(d) + ".png")));
  for (const char* f : {"gradient.jpg", "disk.png", "noise_portrait.jpg", "rgba.png"})
    out.push_back(read_file(image_file(f)));
  out.push_back(png_gray(8, 8));
  return out;
}

}  // namespace servelab::testing
