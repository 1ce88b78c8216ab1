#include "engine/server/model_manifest.h"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "engine/server/register_request.h"

namespace servelab::server {

void apply_manifest(runtime::ModelSpec& spec, const std::string& path) {
  std::ifstream in(path);
  if (!in) return;
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (!j.is_object()) throw std::runtime_error("cannot parse the model manifest " + path);
  nlohmann::json pre = nlohmann::json::object();
  for (const char* key : {"input_width", "input_height", "input_size", "resize", "mean", "std"})
    if (j.contains(key)) pre[key] = j[key];
  try {
    spec.preprocess = preprocess_from_json(pre);
  } catch (const std::exception& e) {
    throw std::runtime_error(path + ": " + e.what());
  }
  if (j.contains("labels") && j["labels"].is_string()) {
    const auto file = std::filesystem::path(path).parent_path() / j["labels"].get<std::string>();
    std::ifstream labels(file);
    if (!labels) throw std::runtime_error("cannot read the labels file " + file.string());
    spec.labels = labels_from_text(std::string(std::istreambuf_iterator<char>(labels), {}));
  }
}

}  // namespace servelab::server
