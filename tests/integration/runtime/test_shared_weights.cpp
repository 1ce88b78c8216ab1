// The engine with a weight store (EngineOptions::weight_store): variants of one backbone
// (`scripts/make-models --tiny` exports tiny_variant_0..3: one backbone, a head each) keep
// the backbone once, answer exactly as without the store, and give back what they alone use.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "runtime_test_util.h"
#include "tests/support/temp_dir.h"

using namespace servelab;
using namespace servelab::runtime;
using namespace servelab::runtime::test;
namespace fs = std::filesystem;

namespace {

// TinyVariant (scripts/make-models), by hand: tensors of 4,096 bytes or more are blobs.
// conv2.weight 64x32x3x3 floats = 73,728 B (the backbone's one blob); head.weight 100x64
// floats = 25,600 B (the variant's own). The small tensors share one pack per module, each
// at a 64-byte boundary, in submodule order: conv1.weight 3,456 B at 0, conv1.bias 128 at
// 3,456, conv2.bias 256 at 3,584, head.bias 400 at 3,840: 4,240 bytes, the variant's own
// (its head's bias differs).
constexpr uint64_t kBackboneBytes = 64 * 32 * 3 * 3 * 4;
constexpr uint64_t kHeadBytes = 100 * 64 * 4 + 4240;

size_t files_under(const fs::path& dir) {
  size_t n = 0;
  std::error_code ec;
  for (const auto& e : fs::recursive_directory_iterator(dir, ec)) n += e.is_regular_file();
  return n;
}

EngineOptions with_store(const fs::path& dir) {
  EngineOptions o = options(1);
  o.weight_store = dir.string();
  return o;
}

std::vector<float> logits(Engine& engine, const std::string& model) {
  std::vector<float> input(3 * 32 * 32);
  for (size_t i = 0; i < input.size(); ++i) input[i] = static_cast<float>(i % 17) / 17.0f - 0.5f;
  Collector c;
  REQUIRE(engine.infer(model, input, c.callback()) == 0);
  auto r = c.wait(1);
  REQUIRE(r[0].status == RequestStatus::Ok);
  return r[0].output;
}

}  // namespace

TEST_CASE("variants of one backbone keep it once: unique bytes are their heads",
          "[runtime][weights]") {
  servelab::testutil::TempDir dir;
  Engine engine(with_store(dir.path()));
  for (int i = 0; i < 4; ++i) engine.register_model(tiny_spec("tiny_variant_" + std::to_string(i)));
  for (int i = 0; i < 4; ++i) {
    auto st = engine.model("tiny_variant_" + std::to_string(i));
    REQUIRE(st);
    CHECK(st->weights.logical == kBackboneBytes + kHeadBytes);
    CHECK(st->weights.unique == kHeadBytes);
    CHECK(st->weights.shared == kBackboneBytes);
  }
  CHECK(files_under(dir / "blobs") == 1 + 2 * 4);  // one backbone; four heads and packs
}

TEST_CASE("a model answers the same with and without the weight store", "[runtime][weights]") {
  servelab::testutil::TempDir dir;
  Engine plain(options(1));
  plain.register_model(tiny_spec("tiny_variant_1"));
  std::vector<float> want = logits(plain, "tiny_variant_1");
  {
    Engine stored(with_store(dir.path()));
    stored.register_model(tiny_spec("tiny_variant_1"));
    CHECK(logits(stored, "tiny_variant_1") == want);
  }
  // Another engine on the same store (as another process would) loads through the skeleton.
  Engine again(with_store(dir.path()));
  again.register_model(tiny_spec("tiny_variant_1"));
  CHECK(logits(again, "tiny_variant_1") == want);
  CHECK(files_under(dir / "skeletons") == 4);  // the skeleton, its blob list, warm-up input, check
}

TEST_CASE("removing a variant deletes only the blobs no other model uses",
          "[runtime][weights]") {
  servelab::testutil::TempDir dir;
  Engine engine(with_store(dir.path()));
  engine.register_model(tiny_spec("tiny_variant_0"));
  engine.register_model(tiny_spec("tiny_variant_1"));
  REQUIRE(files_under(dir / "blobs") == 5);
  REQUIRE(engine.unregister_model("tiny_variant_0"));
  CHECK(files_under(dir / "blobs") == 3);  // its head went; the backbone stays for variant 1
  CHECK(files_under(dir / "skeletons") == 4);  // variant 1's skeleton, blob list, warm-up input, check
  auto st = engine.model("tiny_variant_1");
  REQUIRE(st);
  CHECK(st->weights.unique == kBackboneBytes + kHeadBytes);  // everything is its own now
  CHECK_FALSE(logits(engine, "tiny_variant_1").empty());
  REQUIRE(engine.unregister_model("tiny_variant_1"));
  CHECK(files_under(dir / "blobs") == 0);
  CHECK(files_under(dir / "skeletons") == 0);
}

TEST_CASE("a blob another engine on the store still holds is kept when one deletes it",
          "[runtime][weights]") {
  servelab::testutil::TempDir dir;
  Engine first(with_store(dir.path()));
  first.register_model(tiny_spec("tiny_variant_2"));
  {
    Engine second(with_store(dir.path()));  // another holder, as another server would be
    second.register_model(tiny_spec("tiny_variant_2"));
    second.register_model(tiny_spec("tiny_variant_3"));
    REQUIRE(files_under(dir / "blobs") == 5);
    REQUIRE(second.unregister_model("tiny_variant_2"));
    REQUIRE(second.unregister_model("tiny_variant_3"));
    CHECK(files_under(dir / "blobs") == 3);  // variant 3's head went; first's blobs stayed
  }
  CHECK(files_under(dir / "skeletons") == 4);  // variant 2's skeleton, blob list, warm-up input, check
  // A fresh engine on the store loads variant 2 through the skeleton the first one holds.
  Engine third(with_store(dir.path()));
  third.register_model(tiny_spec("tiny_variant_2"));
  CHECK(logits(third, "tiny_variant_2") == logits(first, "tiny_variant_2"));
}

TEST_CASE("a variant whose head has other shapes than its family's keeps its own and answers "
          "as without the store", "[runtime][weights]") {
  // tiny_variant_narrow: tiny_variant_0's program and backbone with a 10x64 head.
  servelab::testutil::TempDir dir;
  Engine plain(options(1));
  plain.register_model(tiny_spec("tiny_variant_narrow"));
  const std::vector<float> want = logits(plain, "tiny_variant_narrow");
  REQUIRE(want.size() == 10);
  Engine engine(with_store(dir.path()));
  engine.register_model(tiny_spec("tiny_variant_0"));  // the family's shapes loaded first
  engine.register_model(tiny_spec("tiny_variant_narrow"));
  CHECK(logits(engine, "tiny_variant_narrow") == want);
  CHECK(logits(engine, "tiny_variant_0").size() == 100);
  auto st = engine.model("tiny_variant_narrow");
  REQUIRE(st);
  CHECK(st->weights.shared == kBackboneBytes);  // the backbone, and not the family's head
  // Loaded again from its skeleton, as after an eviction or in another process.
  Engine again(with_store(dir.path()));
  again.register_model(tiny_spec("tiny_variant_0"));
  again.register_model(tiny_spec("tiny_variant_narrow"));
  CHECK(logits(again, "tiny_variant_narrow") == want);
}

TEST_CASE("a file checked once on a store is not checked again, by any engine on it",
          "[runtime][weights][check]") {
  servelab::testutil::TempDir dir;
  Engine first(with_store(dir.path()));
  first.register_model(tiny_spec("tiny_variant_1"));
  auto checked = first.model("tiny_variant_1");
  REQUIRE(checked);
  CHECK_FALSE(checked->check_recorded);  // the first registration runs the forwards
  const std::vector<float> want = logits(first, "tiny_variant_1");
  fs::path record;
  for (const auto& e : fs::directory_iterator(dir / "skeletons"))
    if (e.path().extension() == ".check") record = e.path();
  REQUIRE_FALSE(record.empty());

  // Another engine on the store (as another process would) takes the record, and measures
  // the model as the forwards did; the model answers the same.
  Engine second(with_store(dir.path()));
  second.register_model(tiny_spec("tiny_variant_1"));
  auto recorded = second.model("tiny_variant_1");
  REQUIRE(recorded);
  CHECK(recorded->check_recorded);
  CHECK(recorded->workspace_bytes == checked->workspace_bytes);
  CHECK(recorded->size_bytes == checked->size_bytes);
  CHECK(logits(second, "tiny_variant_1") == want);

  // The record's classes still meet the registration's labels.
  ModelSpec wrong = tiny_spec("tiny_variant_1", "wrong_labels");
  wrong.labels.pop_back();
  CHECK_THROWS_AS(second.register_model(wrong), ModelError);

  // Another input size, or a damaged record: the forwards run again.
  ModelSpec bigger = tiny_spec("tiny_variant_1", "bigger");
  bigger.preprocess.input_width = bigger.preprocess.input_height = 40;
  second.register_model(bigger);
  CHECK_FALSE(second.model("bigger")->check_recorded);
  std::ofstream(record, std::ios::trunc) << "32 32 not-a-number\n";
  Engine third(with_store(dir.path()));
  third.register_model(tiny_spec("tiny_variant_1"));
  CHECK_FALSE(third.model("tiny_variant_1")->check_recorded);
  CHECK(logits(third, "tiny_variant_1") == want);
}
