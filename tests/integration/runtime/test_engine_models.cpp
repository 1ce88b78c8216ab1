// Registration, ground truth and input errors of the engine, with real tiny TorchScript models;
// the module copies behind the CUDA device tier (engine/runtime/torch_tiers.h), run on the
// CPU: packing and the per-storage copy do not depend on the device, so every CI run checks
// them (tests/gpu checks them on a real GPU: scripts/gpu-check).
#include <torch/script.h>

#include <numeric>
#include <set>

#include "engine/runtime/preprocess.h"
#include "engine/runtime/torch_tiers.h"
#include "runtime_test_util.h"

using namespace servelab;
using namespace servelab::runtime;
using namespace servelab::runtime::test;

namespace {

std::vector<at::Tensor> tensors_of(const torch::jit::Module& m) {
  std::vector<at::Tensor> out;
  for (const auto& p : m.parameters(/*recurse=*/true)) out.push_back(p);
  for (const auto& b : m.buffers(/*recurse=*/true)) out.push_back(b);
  return out;
}

std::set<const void*> storages_of(const torch::jit::Module& m) {
  std::set<const void*> out;
  for (const at::Tensor& t : tensors_of(m)) out.insert(t.storage().data());
  return out;
}

at::Tensor forward(torch::jit::Module& m, const at::Tensor& x) {
  c10::InferenceMode guard;
  return m.forward({x}).toTensor();
}

int register_status(Engine& e, const ModelSpec& spec) {
  try {
    e.register_model(spec);
  } catch (const ModelError& err) {
    INFO(err.what());
    CHECK(std::string(err.what()).size() > 10);  // a message the user can act on
    return err.http_status;
  }
  return 200;
}

}  // namespace

TEST_CASE("classify matches a direct LibTorch forward on the same preprocessed input",
          "[runtime]") {
  Engine engine(options(2));
  ModelSpec spec = tiny_spec("tiny_cnn");
  ModelStatus st = engine.register_model(spec);

  // Ground truth: the module loaded directly, run on preprocess_image's tensor.
  torch::jit::Module module = torch::jit::load(spec.file);
  module.eval();
  uint64_t param_bytes = 0;
  for (const auto& p : module.parameters()) param_bytes += p.nbytes();
  for (const auto& b : module.buffers()) param_bytes += b.nbytes();
  CHECK(st.param_bytes == param_bytes);
  CHECK(st.workspace_bytes > 0);
  CHECK(st.size_bytes == st.param_bytes + st.workspace_bytes);
  CHECK(st.resident_host);

  for (const char* image : {"gradient.jpg", "disk.png", "noise_portrait.jpg", "small.png",
                            "gray.png", "rgba.png"}) {
    INFO(image);
    std::string bytes = read_file(models_dir() + "/images/" + image);
    Input in = preprocess_image(bytes, spec.preprocess);
    REQUIRE(in.chw.size() == 3 * 32 * 32);
    at::Tensor x = torch::from_blob(in.chw.data(), {1, 3, 32, 32}, torch::kFloat).clone();
    at::Tensor expected;
    {
      c10::InferenceMode guard;
      expected = torch::softmax(module.forward({x}).toTensor(), 1)[0];
    }
    int64_t best = expected.argmax().item<int64_t>();

    Collector c;
    REQUIRE(engine.classify("tiny_cnn", bytes, 10, c.callback()) == 0);
    ClassifyResult r = c.wait(1)[0];
    REQUIRE(r.status == RequestStatus::Ok);
    REQUIRE(r.top.size() == 10);
    double sum = 0;
    for (size_t i = 0; i < r.top.size(); ++i) {
      sum += r.top[i].second;
      if (i) CHECK(r.top[i - 1].second >= r.top[i].second);
    }
    CHECK(sum == Approx(1.0).epsilon(1e-4));
    CHECK(r.top[0].first == spec.labels[best]);
    CHECK(r.top[0].second == Approx(expected[best].item<float>()).epsilon(1e-4));
    CHECK(r.batch_size == 1);
    CHECK(r.compute_s > 0);
  }
}

TEST_CASE("the noop model returns its first ten input values as logits", "[runtime]") {
  Engine engine(options(1));
  engine.register_model(tiny_spec("noop"));
  std::vector<float> input(3 * 32 * 32, 0.0f);
  input[7] = 5.0f;  // logit of class 7 dominates
  Collector c;
  REQUIRE(engine.submit_raw("noop", input, 3, c.callback()) == 0);
  ClassifyResult r = c.wait(1)[0];
  REQUIRE(r.status == RequestStatus::Ok);
  REQUIRE(r.top.size() == 3);
  CHECK(r.top[0].first == "noop_class_7");
  CHECK(r.top[0].second == Approx(std::exp(5.0) / (std::exp(5.0) + 9)).epsilon(1e-4));
}

TEST_CASE("models that cannot be loaded or run are refused with 400 and not registered",
          "[runtime]") {
  Engine engine(options(1));
  ModelSpec spec = tiny_spec("tiny_cnn", "bad");
  for (const char* file : {"bad/corrupt.pt", "bad/not_torchscript.pt", "bad/empty.pt",
                           "does_not_exist.pt", "fails.pt", "images/disk.png"}) {
    INFO(file);
    spec.file = models_dir() + "/" + file;
    CHECK(register_status(engine, spec) == 400);
  }
  spec = tiny_spec("tiny_cnn", "bad");
  spec.labels.pop_back();  // 9 labels for 10 outputs
  CHECK(register_status(engine, spec) == 400);
  spec = tiny_spec("tiny_cnn", "bad");
  spec.preprocess.std[1] = 0;
  CHECK(register_status(engine, spec) == 400);
  CHECK(engine.models().empty());
  CHECK_FALSE(engine.model("bad"));
  // The name stays free for a good model.
  CHECK(register_status(engine, tiny_spec("tiny_cnn", "bad")) == 200);
  CHECK(engine.models().size() == 1);
}

TEST_CASE("model names are validated and unique", "[runtime]") {
  Engine engine(options(1));
  for (std::string name : {std::string(""), std::string("a/b"), std::string("..\\x"),
                           std::string(".."), std::string("has space"), std::string(129, 'x'),
                           std::string("caf\xc3\xa9")}) {
    INFO("name: " << name);
    ModelSpec spec = tiny_spec("noop");
    spec.name = name;
    CHECK(register_status(engine, spec) == 400);
  }
  CHECK(register_status(engine, tiny_spec("noop", std::string(128, 'x'))) == 200);
  CHECK(register_status(engine, tiny_spec("noop", "A-z_0.9")) == 200);
  CHECK(register_status(engine, tiny_spec("noop", "A-z_0.9")) == 409);
  CHECK(engine.models().size() == 2);
}

TEST_CASE("bad requests are answered synchronously", "[runtime]") {
  Engine engine(options(1));
  engine.register_model(tiny_spec("tiny_cnn"));
  int calls = 0;
  auto never = [&](ClassifyResult) { ++calls; };
  std::string png = read_file(models_dir() + "/images/disk.png");
  CHECK(engine.classify("nope", png, 5, never) == 404);
  CHECK(engine.classify("tiny_cnn", read_file(models_dir() + "/bad/not_an_image.jpg"), 5, never) == 400);
  CHECK(engine.classify("tiny_cnn", "", 5, never) == 400);
  CHECK(engine.classify("tiny_cnn", png.substr(0, png.size() / 3), 5, never) == 400);
  CHECK(engine.submit_raw("tiny_cnn", std::vector<float>(10), 5, never) == 400);
  CHECK(engine.submit_raw("tiny_cnn", {}, 5, never) == 400);
  auto never_each = [&](size_t, ClassifyResult) { ++calls; };
  const std::vector<float> good(3 * 32 * 32, 0.5f);
  CHECK(engine.submit_raw_together("nope", {good}, 1, never_each) == 404);
  // One input of the wrong size: nothing of the call is submitted.
  CHECK(engine.submit_raw_together("tiny_cnn", {good, std::vector<float>(10)}, 1, never_each) ==
        400);
  CHECK(calls == 0);
}

TEST_CASE("unregistering fails queued requests and frees the name", "[runtime]") {
  // Fixed batches of 100 never fill: requests stay queued until the model goes away.
  Engine engine(options(1, "fixed", params({{"size", "100"}})));
  engine.register_model(tiny_spec("tiny_cnn"));
  std::string png = read_file(models_dir() + "/images/disk.png");
  Collector c;
  for (int i = 0; i < 3; ++i) REQUIRE(engine.classify("tiny_cnn", png, 1, c.callback()) == 0);
  CHECK(engine.unregister_model("tiny_cnn"));
  CHECK_FALSE(engine.unregister_model("tiny_cnn"));
  for (const ClassifyResult& r : c.wait(3)) {
    CHECK(r.status == RequestStatus::Failed);
    CHECK_FALSE(r.error.empty());
  }
  CHECK_FALSE(engine.model("tiny_cnn"));
  CHECK(engine.classify("tiny_cnn", png, 1, c.callback()) == 404);
  engine.register_model(tiny_spec("tiny_cnn"));
  CHECK(engine.model("tiny_cnn"));
}

TEST_CASE("a packed module keeps its tensors in one buffer and computes the same", "[runtime]") {
  torch::jit::Module m = torch::jit::load(models_dir() + "/tiny_cnn.pt");
  m.eval();
  const at::Tensor x = torch::rand({4, 3, 32, 32});
  const at::Tensor ref = forward(m, x);
  const size_t n = tensors_of(m).size();
  REQUIRE(storages_of(m).size() == n);  // the fixture: one storage per tensor

  ModulePtr p = packed(m, /*pinned=*/false);
  CHECK(storages_of(*p).size() == 1);
  // Each slot is aligned to 256 bytes: at most 255 bytes of padding per tensor.
  CHECK(tensor_bytes(*p) >= tensor_bytes(m));
  CHECK(tensor_bytes(*p) < tensor_bytes(m) + 256 * n);
  CHECK(torch::equal(forward(*p, x), ref));
}

TEST_CASE("a device copy has its own storage per host storage and leaves the host alone",
          "[runtime]") {
  torch::jit::Module m = torch::jit::load(models_dir() + "/tiny_cnn.pt");
  m.eval();
  const at::Tensor x = torch::rand({4, 3, 32, 32});
  const at::Tensor ref = forward(m, x);
  ModulePtr host = packed(m, /*pinned=*/false);

  for (torch::jit::Module* from : {&m, host.get()}) {
    ModulePtr copy = copy_to_device(*from, torch::kCPU);  // the CPU as the "device"
    const std::set<const void*> theirs = storages_of(*from), ours = storages_of(*copy);
    CHECK(ours.size() == theirs.size());
    for (const void* s : ours) CHECK(theirs.count(s) == 0);
    CHECK(torch::equal(forward(*copy, x), ref));
    {
      torch::NoGradGuard no_grad;
      for (at::Tensor t : tensors_of(*copy)) t.zero_();
    }
    CHECK_FALSE(torch::equal(forward(*copy, x), ref));  // the copy's tensors are its own
    CHECK(torch::equal(forward(*from, x), ref));        // and the source's are untouched
  }
}
