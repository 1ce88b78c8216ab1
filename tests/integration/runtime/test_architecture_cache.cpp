// Variants of one architecture in one process: the second loads as a structural copy of the
// first (one set of types, compiled code and plans), yet answers with its own weights; so
// does each variant a weight store registers from its file.
// LibTorch first: its logging headers define CHECK, which Catch2's must replace.
#include <torch/script.h>

#include "engine/runtime/shared_weights.h"
#include "engine/runtime/torch_weight_store.h"
#include "tiny_variants.h"
#undef CHECK
#undef CHECK_FALSE
#include <catch2/catch.hpp>

#include <filesystem>

#include "runtime_test_util.h"
#include "tests/support/temp_dir.h"

using namespace servelab;
using namespace servelab::runtime;
namespace fs = std::filesystem;

using test::logits;
using test::plain;
using test::variant;

TEST_CASE("a variant loaded as a copy of another's architecture answers with its own weights",
          "[runtime][weights][architecture]") {
  servelab::testutil::TempDir dir;
  store::BlobStore blobs((dir / "blobs").string());
  const std::string s0 = (dir / "s0.pt").string(), s1 = (dir / "s1.pt").string();
  SharedModule a = share_weights(plain(0), blobs, s0);
  SharedModule b = share_weights(plain(1), blobs, s1);
  REQUIRE_FALSE(a.code_key.empty());
  CHECK(a.code_key == b.code_key);  // same code, whatever names the exports were given

  ArchitectureCache cache;
  SharedModule first = load_shared(s0, blobs, &cache);
  SharedModule second = load_shared(s1, blobs, &cache);
  CHECK(second.module->type() == first.module->type());  // a copy: one class, one code
  torch::jit::Module want0 = plain(0), want1 = plain(1);
  CHECK(torch::equal(logits(*second.module), logits(want1)));
  CHECK(torch::equal(logits(*first.module), logits(want0)));
  CHECK_FALSE(torch::equal(logits(want0), logits(want1)));  // the heads do differ

  // Without the cache each load imports its own code.
  SharedModule alone = load_shared(s1, blobs);
  CHECK(alone.module->type() != first.module->type());
  CHECK(torch::equal(logits(*alone.module), logits(want1)));
}

TEST_CASE("models of different code are never copies of each other",
          "[runtime][weights][architecture]") {
  servelab::testutil::TempDir dir;
  store::BlobStore blobs((dir / "blobs").string());
  const std::string sv = (dir / "v.pt").string(), sc = (dir / "c.pt").string();
  SharedModule v = share_weights(plain(0), blobs, sv);
  torch::jit::Module cnn = torch::jit::load(test::models_dir() + "/tiny_cnn.pt", torch::kCPU);
  SharedModule c = share_weights(cnn, blobs, sc);
  CHECK(v.code_key != c.code_key);
  ArchitectureCache cache;
  SharedModule first = load_shared(sv, blobs, &cache);
  SharedModule other = load_shared(sc, blobs, &cache);
  CHECK(other.module->type() != first.module->type());
}

TEST_CASE("a variant is copied from any live module of its code, not only the last one loaded",
          "[runtime][weights][architecture]") {
  // A server whose host tier evicts the variant it loaded last still holds others of its
  // architecture: the next load must copy one of those, not import the code again.
  servelab::testutil::TempDir dir;
  store::BlobStore blobs((dir / "blobs").string());
  std::vector<std::string> skeletons;
  for (int i = 0; i < 3; ++i) {
    skeletons.push_back((dir / ("s" + std::to_string(i) + ".pt")).string());
    share_weights(plain(i), blobs, skeletons.back());
  }
  ArchitectureCache cache;
  SharedModule first = load_shared(skeletons[0], blobs, &cache);
  { SharedModule last = load_shared(skeletons[1], blobs, &cache); }  // loaded last, then gone
  SharedModule again = load_shared(skeletons[2], blobs, &cache);
  CHECK(again.module->type() == first.module->type());
  torch::jit::Module want = plain(2);
  CHECK(torch::equal(logits(*again.module), logits(want)));
}

TEST_CASE("variants registered from their files share the first one's architecture",
          "[runtime][weights][architecture]") {
  // The process that first puts a variant into the store loads its whole file (to share its
  // tensors): each later variant must still be served as a copy of the first, not keep the
  // code its own file import compiled (a megabyte or more of graphs per variant).
  servelab::testutil::TempDir dir;
  TorchWeightStore store(dir.path().string(), "test");
  std::vector<ModulePtr> held;
  for (int i = 0; i < 3; ++i) held.push_back(store.add(ModelId(i), "v" + std::to_string(i),
                                                       variant(i), ""));
  CHECK(held[1]->type() == held[0]->type());
  CHECK(held[2]->type() == held[0]->type());
  for (int i = 0; i < 3; ++i) {
    torch::jit::Module want = plain(i);
    CHECK(torch::equal(logits(*held[i]), logits(want)));
  }
}
