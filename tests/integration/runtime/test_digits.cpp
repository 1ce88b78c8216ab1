// The digits models (scripts/digits_models.py) served by the engine: real handwritten digits
// from scikit-learn's validation split, sent as PNG bytes through the engine's decoding and
// preprocessing, are recognised as their true class (ground truth from the dataset, not from
// the model). A wrong channel order, normalization or resize would fall to chance (10%).
#include <catch2/catch.hpp>

#include <string>

#include "runtime_test_util.h"

using namespace servelab;
using namespace servelab::runtime;
using namespace servelab::runtime::test;

namespace {

ModelSpec digits_spec(const std::string& model) {
  ModelSpec spec;
  spec.name = model;
  spec.file = models_dir() + "/" + model + ".pt";
  spec.labels = read_labels(models_dir() + "/" + model + ".labels.txt");
  spec.preprocess.input_width = spec.preprocess.input_height = 8;
  spec.preprocess.resize = 0;
  for (int c = 0; c < 3; ++c) {  // the manifest's: mean 0, std 1 (inputs in [0, 1])
    spec.preprocess.mean[c] = 0;
    spec.preprocess.std[c] = 1;
  }
  return spec;
}

}  // namespace

TEST_CASE("digits models served by the engine recognise real handwritten digits", "[runtime]") {
  Engine engine(options(1));
  for (const char* model : {"digits_linear", "digits_cnn"}) {
    engine.register_model(digits_spec(model));
    int right = 0;
    for (int k = 0; k < 10; ++k) {
      Collector one;
      const std::string png = read_file(models_dir() + "/images/digit_" + std::to_string(k) + ".png");
      REQUIRE(engine.classify(model, png, 1, one.callback()) == 0);
      right += one.wait(1)[0].top[0].first == std::to_string(k);
    }
    INFO(model << ": " << right << " of 10 digits right (validation accuracy 0.96-0.99)");
    CHECK(right >= 8);
  }
}
