// The profiler's loads by source (calibration/load_sources.h) on a real model through the
// LibTorch executor: each source is measured, its phases are the ones its path takes (a weight
// store maps and checks blobs; a file load does not), and the store it wrote is gone after.
// What the phases cost is this machine's, never asserted.
#include <catch2/catch.hpp>

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "calibration/load_sources.h"
#include "calibration/profiler.h"
#include "engine/runtime/preprocess.h"
#include "tests/support/temp_dir.h"

using namespace servelab;
namespace fs = std::filesystem;

TEST_CASE("the profiler measures a model's load from every source", "[experiments][sources]") {
  servelab::testutil::TempDir tmp("servelab-load-sources-test");
  REQUIRE(::setenv("TMPDIR", tmp.path().c_str(), 1) == 0);  // where the store is written
  experiments::ProfileOptions o;
  o.models_dir = std::string(SERVELAB_SOURCE_DIR) + "/models";
  const runtime::ModelSpec spec = experiments::model_spec(o, "tiny_cnn");
  auto exec = runtime::make_torch_executor("cpu", 1);
  exec->add(ModelId(0), spec, 1, 1);
  std::ifstream image(o.models_dir + "/images/gradient.jpg", std::ios::binary);
  REQUIRE(image);
  const runtime::Input input = runtime::preprocess_image(
      std::string(std::istreambuf_iterator<char>(image), {}), spec.preprocess, true);
  ModelProfile p;
  p.name = "tiny_cnn";
  p.batches = {{1, 0.0001, 0, {}}};
  experiments::measure_load_sources(*exec, ModelId(0), spec, input, 1, 3, p, {});
  exec->remove(ModelId(0));
  ::unsetenv("TMPDIR");

  CHECK_FALSE(p.load_sources[int(LoadSource::File)]);  // measure_loads' part, not this one's
  for (LoadSource s : {LoadSource::FileCold, LoadSource::Store, LoadSource::StoreCold,
                       LoadSource::StoreSibling}) {
    CAPTURE(load_source_name(s));
    REQUIRE(p.load_sources[int(s)]);
    const LoadCost& c = *p.load_sources[int(s)];
    CHECK(c.deserialize > 0);  // the module built (imported, or copied from its sibling)
    CHECK(c.copy == 0);  // a CPU executor copies nothing to a device
    if (s == LoadSource::FileCold) {
      CHECK(c.read > 0);
      CHECK(c.share == 0);
    } else if (s != LoadSource::StoreSibling) {
      CHECK(c.share > 0);  // the blobs mapped and their checksums checked
    }
  }
  p.validate();
  CHECK(fs::is_empty(tmp.path()));  // the store is deleted
}

TEST_CASE("a source's cost is the median phases scaled to the median load",
          "[experiments][sources]") {
  // Phases 1+10, 2+20, 3+30 ms of loads that took 12, 24, 36 ms (the rest unaccounted for);
  // first batches of 5, 6, 7 ms against a warm 4. Medians: read 2, deserialize 20, scaled to
  // the median load of 24 (x 24/22); the first batch's extra 6 - 4.
  std::vector<experiments::LoadSample> samples(3);
  for (int i = 0; i < 3; ++i) {
    samples[i].parts.read_s = 0.001 * (i + 1);
    samples[i].parts.deserialize_s = 0.010 * (i + 1);
    samples[i].load_s = 0.012 * (i + 1);
    samples[i].first_batch_s = 0.005 + 0.001 * i;
  }
  const LoadCost c = experiments::median_cost(samples, 0.004);
  CHECK(c.read == Approx(0.002 * 24 / 22));
  CHECK(c.deserialize == Approx(0.020 * 24 / 22));
  CHECK(c.share == 0);
  CHECK(c.first_batch == Approx(0.002));
  CHECK(c.total() == Approx(0.026));
}
