#include "tests/integration/server/server_fixture.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <sstream>

namespace servelab::testing {
namespace fs = std::filesystem;
using nlohmann::json;

TempDir::TempDir() {
  static int n = 0;
  path = fs::temp_directory_path() /
         ("servelab-server-it-" + std::to_string(::getpid()) + "-" + std::to_string(n++));
  fs::remove_all(path);
  fs::create_directories(path);
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path, ec);
}

std::string models_dir() {
  std::string dir = std::string(SERVELAB_SOURCE_DIR) + "/models";
  INFO("tiny test models missing in " << dir << ": run `bash scripts/make-models --tiny`");
  REQUIRE(fs::exists(dir + "/tiny_cnn.pt"));
  REQUIRE(fs::exists(dir + "/noop.pt"));
  REQUIRE(fs::exists(dir + "/bad/corrupt.pt"));
  return dir;
}

std::string model_file(const std::string& model) { return models_dir() + "/" + model + ".pt"; }
std::string image_file(const std::string& image) { return models_dir() + "/images/" + image; }
std::string bad_file(const std::string& file) { return models_dir() + "/bad/" + file; }

namespace {
json manifest_preprocess(const std::string& model) {
  json m = json::parse(read_file(models_dir() + "/" + model + ".json"));
  return {{"input_width", m["input_width"]}, {"input_height", m["input_height"]},
          {"resize", m["resize"]},           {"mean", m["mean"]},
          {"std", m["std"]}};
}
std::string labels_text(const std::string& model) {
  return read_file(models_dir() + "/" + model + ".labels.txt");
}
}  // namespace

std::string register_json(const std::string& name, const std::string& model) {
  json j = {{"name", name},
            {"path", model_file(model)},
            {"labels", labels_text(model)},
            {"preprocess", manifest_preprocess(model)}};
  return j.dump();
}

std::vector<FormField> register_form(const std::string& name, const std::string& model) {
  return {{"name", name, ""},
          {"model", read_file(model_file(model)), model + ".pt"},
          {"labels", labels_text(model), model + ".labels.txt"},
          {"preprocess", manifest_preprocess(model).dump(), ""}};
}

double metric_sum(const std::string& text, const std::string& prefix) {
  std::istringstream in(text);
  std::string line;
  double sum = 0;
  while (std::getline(in, line)) {
    if (line.rfind(prefix, 0) != 0) continue;
    size_t sp = line.rfind(' ');
    if (sp != std::string::npos) sum += std::stod(line.substr(sp + 1));
  }
  return sum;
}

TestServer::TestServer(
    const std::string& store_dir,
    const std::function<void(runtime::EngineOptions&, server::ServerOptions&)>& tweak) {
  runtime::EngineOptions eo;
  eo.device = "cpu";
  server::ServerOptions so;
  so.store_dir = store_dir;
  so.io_threads = 2;
  so.log = false;
  so.model_root = models_dir();  // the tests register the tiny models by their path
  if (tweak) tweak(eo, so);
  server = std::make_unique<server::HttpServer>(so, eo);
  restore = server->start();
  REQUIRE(server->port() != 0);
}

}  // namespace servelab::testing
