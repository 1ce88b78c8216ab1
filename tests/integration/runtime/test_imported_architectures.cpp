// Architectures imported from a weight store ahead of the stores that use them (what `serve
// --processes` does before it forks): every store opened afterwards serves a variant as a
// copy of the one imported architecture, with its own weights. The import is process-wide,
// hence a source file (a test process) of its own.
// LibTorch first: its logging headers define CHECK, which Catch2's must replace.
#include <torch/script.h>

#include "engine/runtime/torch_weight_store.h"
#include "engine/runtime/weight_store_imports.h"
#include "tiny_variants.h"
#undef CHECK
#undef CHECK_FALSE
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "engine/store/digest.h"
#include "runtime_test_util.h"
#include "tests/support/temp_dir.h"

using namespace servelab;
using namespace servelab::runtime;
namespace fs = std::filesystem;

namespace {

using test::logits;
using test::variant;

std::string model(const std::string& name) { return test::models_dir() + "/" + name + ".pt"; }

at::Tensor plain_logits(int i) {
  torch::jit::Module m = test::plain(i);
  return logits(m);
}

std::string skeleton_of(const std::string& store, const std::string& file) {
  return store + "/skeletons/" + store::Sha256::hex_file(file) + ".pt";
}

}  // namespace

TEST_CASE("architectures imported from a weight store serve every store opened afterwards",
          "[runtime][weights][architecture]") {
  servelab::testutil::TempDir dir;
  const std::string w = dir.path().string();
  {
    TorchWeightStore writer(w, "writer");
    writer.add(0, "v0", variant(0), "", {32, 32});
    writer.add(1, "v1", variant(1), "");  // no input: v0's warms the architecture
  }
  // A registration notes its input beside the skeleton; without one, nothing is written.
  CHECK(test::read_file(warm_input_path(skeleton_of(w, variant(0)))) == "32 32\n");
  CHECK_FALSE(fs::exists(warm_input_path(skeleton_of(w, variant(1)))));

  // Before the import, stores opened one after another each import the code themselves.
  {
    TorchWeightStore a(w, "a"), b(w, "b");
    CHECK(a.add(0, "v0", variant(0), "")->type() != b.add(0, "v1", variant(1), "")->type());
  }

  // A file that is not a skeleton is skipped and named; the others are imported.
  const std::string foreign = w + "/skeletons/" + std::string(64, '0') + ".pt";
  std::ofstream(foreign) << "not a zip archive";
  const ImportedArchitectures got = import_weight_store_architectures(w, true);
  CHECK(got.skeletons == 3);
  CHECK(got.architectures == 1);  // the two variants share one architecture
  CHECK(got.warmed == 1);
  REQUIRE(got.skipped.size() == 1);
  CHECK(got.skipped[0].find(foreign) == 0);
  CHECK(import_weight_store_architectures(w, true).architectures == 0);  // nothing new

  // After it, stores opened one after another serve copies of the imported architecture,
  // each variant with its own weights.
  TorchWeightStore a(w, "a2"), b(w, "b2");
  ModulePtr m0 = a.add(0, "v0", variant(0), ""), m1 = b.add(0, "v1", variant(1), "");
  CHECK(m0->type() == m1->type());
  CHECK(torch::equal(logits(*m0), plain_logits(0)));
  CHECK(torch::equal(logits(*m1), plain_logits(1)));
  CHECK_FALSE(torch::equal(plain_logits(0), plain_logits(1)));
}

TEST_CASE("an architecture whose warm-up input fails its forward pass is still imported",
          "[runtime][weights][architecture]") {
  servelab::testutil::TempDir dir;
  const std::string w = dir.path().string();
  {
    TorchWeightStore writer(w, "writer");
    writer.add(0, "cnn", model("tiny_cnn"), "", {1, 1});  // pooling leaves nothing of 1x1
  }
  const ImportedArchitectures got = import_weight_store_architectures(w, true);
  CHECK(got.architectures == 1);
  CHECK(got.warmed == 0);
  REQUIRE(got.skipped.size() == 1);
  CHECK(got.skipped[0].find("warm-up") != std::string::npos);
  TorchWeightStore store(w, "reader");
  ModulePtr m = store.add(0, "cnn", model("tiny_cnn"), "");
  c10::InferenceMode guard;
  CHECK(m->forward({torch::zeros({1, 3, 32, 32})}).toTensor().size(1) == 10);
}
