// Cost profile interpolation (numbers worked out by hand) and the YAML readers.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>

#include "config/engine_yaml.h"
#include "config/profile_yaml.h"
#include "config/yaml_util.h"
#include "engine/control/cost_profile.h"

using namespace servelab;
using Catch::Matchers::Contains;

namespace {

ModelProfile three_points() {
  ModelProfile p;
  p.name = "m";
  p.batches = {{1, 0.010, 0.001, {}}, {4, 0.016, 0.002, {}}, {8, 0.020, 0.004, {}}};
  return p;
}

}  // namespace

TEST_CASE("batch latency is linear between measured sizes and extrapolated beyond",
          "[simulator][profile]") {
  ModelProfile p = three_points();
  CHECK(p.batch_latency(1) == Approx(0.010));
  CHECK(p.batch_latency(2) == Approx(0.012));   // 10 + (16-10)*(1/3)
  CHECK(p.batch_latency(3) == Approx(0.014));
  CHECK(p.batch_latency(6) == Approx(0.018));   // halfway 16..20
  CHECK(p.batch_latency(8) == Approx(0.020));
  CHECK(p.batch_latency(12) == Approx(0.024));  // slope 1 ms per request past 8
  CHECK(p.batch_stddev(6) == Approx(0.003));
  ModelProfile single;
  single.batches = {{4, 0.05, 0, {}}};
  CHECK(single.batch_latency(1) == Approx(0.05));
  CHECK(single.batch_latency(64) == Approx(0.05));
}

TEST_CASE("noisy draws follow the measured distribution", "[simulator][profile]") {
  ModelProfile p = three_points();
  std::mt19937_64 rng(3);
  CHECK(p.sample_batch_latency(4, CostNoise::None, rng) == 0.016);
  double sum = 0, sq = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    double x = p.sample_batch_latency(4, CostNoise::Normal, rng);
    REQUIRE(x > 0);
    sum += x;
    sq += x * x;
  }
  double mean = sum / n, sd = std::sqrt(sq / n - mean * mean);
  CHECK(mean == Approx(0.016).epsilon(0.005));
  CHECK(sd == Approx(0.002).epsilon(0.05));

  p.batches[0].samples = {0.009, 0.011};
  for (int i = 0; i < 100; ++i) {
    double x = p.sample_batch_latency(1, CostNoise::Empirical, rng);
    REQUIRE((x == Approx(0.009) || x == Approx(0.011)));
  }
  // Batch 2 is nearest to size 1's samples, scaled by 12/10.
  double x = p.sample_batch_latency(2, CostNoise::Empirical, rng);
  CHECK((x == Approx(0.009 * 1.2) || x == Approx(0.011 * 1.2)));
}

TEST_CASE("load time adds measured steps and names the gap", "[simulator][profile]") {
  ModelProfile p = three_points();
  p.set_load_time(Tier::Disk, Tier::Host, 2.0);
  p.set_load_time(Tier::Host, Tier::Device, 0.09);
  CHECK(p.load_seconds(Tier::Host, Tier::Device) == Approx(0.09));
  CHECK(p.load_seconds(Tier::Disk, Tier::Device) == Approx(2.09));
  p.set_load_time(Tier::Disk, Tier::Device, 1.5);
  CHECK(p.load_seconds(Tier::Disk, Tier::Device) == Approx(1.5));
  ModelProfile q = three_points();
  CHECK_THROWS_WITH(q.load_seconds(Tier::Host, Tier::Device), Contains("no load time"));
}

TEST_CASE("profile YAML is read with units and strict keys", "[simulator][profile][config]") {
  YAML::Node n = YAML::Load(R"(
models:
  net:
    size_mb: 233
    batch_latency_ms:
      - {batch: 1, mean: 8, stddev: 0.4}
      - {batch: 8, mean: 18, samples: [17, 19]}
    load_ms: {host->device: 90}
)");
  CostProfile p = config::parse_profile(n, "p.yaml");
  REQUIRE(p.models.size() == 1);
  const ModelProfile& m = *p.find("net");
  CHECK(m.size_bytes == 233000000);
  CHECK(m.batch_latency(1) == Approx(0.008));
  CHECK(m.batches[1].samples.size() == 2);
  CHECK(m.load_seconds(Tier::Host, Tier::Device) == Approx(0.09));
  // Round trip through the writer.
  CostProfile back = config::parse_profile(config::profile_to_yaml({p, {}}), "back");
  CHECK(back.models[0].batch_latency(4) == Approx(m.batch_latency(4)));

  YAML::Node bad = YAML::Clone(n);
  bad["models"]["net"]["latency"] = 3;
  CHECK_THROWS_WITH(config::parse_profile(bad, "p.yaml"),
                    Contains("p.yaml") && Contains("models.net.latency") && Contains("unknown key"));
  YAML::Node unsorted = YAML::Load("models: {a: {size_bytes: 1, batch_latency_ms: "
                                   "[{batch: 4, mean: 1}, {batch: 2, mean: 1}]}}");
  CHECK_THROWS_WITH(config::parse_profile(unsorted, "u.yaml"), Contains("increasing"));
  CHECK_THROWS_WITH(config::load_profile("/nonexistent/p.yaml"), Contains("cannot read"));
  // A name the engine could not register (control bytes, invalid UTF-8: found by fuzzing,
  // they read back as another name) is refused, and not echoed.
  YAML::Node odd = YAML::Load("models: {\"ne\\x1e\\xc4t\": {size_bytes: 1, "
                              "batch_latency_ms: [{batch: 1, mean: 1}]}}");
  CHECK_THROWS_WITH(config::parse_profile(odd, "o.yaml"),
                    Contains("o.yaml") && Contains("models") && Contains("may only contain letters") &&
                        !Contains("\x1e"));
  // A mapping built in memory may hold a key twice (files are refused by load_file).
  YAML::Node twice = YAML::Load("models: {a: {size_bytes: 1, batch_latency_ms: [{batch: 1, mean: 1}]},"
                                " a: {size_bytes: 2, batch_latency_ms: [{batch: 1, mean: 2}]}}");
  CHECK_THROWS_WITH(config::parse_profile(twice, "t.yaml"), Contains("listed twice"));
}

TEST_CASE("profile eviction times are read, written back, scaled and checked",
          "[simulator][profile]") {
  YAML::Node n = YAML::Load("models: {a: {size_bytes: 1, batch_latency_ms: [{batch: 1, mean: 5}], "
                            "load_ms: {disk->host: 40}, evict_ms: {host: 3.5}}}");
  CostProfile p = config::parse_profile(n, "p.yaml");
  CHECK(p.models[0].evict_time[int(Tier::Host)] == Approx(0.0035));
  CHECK(p.models[0].evict_time[int(Tier::Device)] == 0);  // not measured
  CostProfile back = config::parse_profile(config::profile_to_yaml({p, {}}), "back");
  CHECK(back.models[0].evict_time[int(Tier::Host)] == Approx(0.0035));
  p.models[0].scale_costs(2);
  CHECK(p.models[0].evict_time[int(Tier::Host)] == Approx(0.007));
  for (const char* bad : {"{disk: 1}", "{gpu: 1}", "{host: -1}", "[1]"}) {
    CAPTURE(bad);
    YAML::Node b = YAML::Clone(n);
    b["models"]["a"]["evict_ms"] = YAML::Load(bad);
    CHECK_THROWS_WITH(config::parse_profile(b, "p.yaml"), Contains("evict_ms"));
  }
}

TEST_CASE("profile request overheads are read, written back and checked", "[simulator][profile]") {
  YAML::Node n = YAML::Load("models: {a: {size_bytes: 1, batch_latency_ms: [{batch: 1, mean: 5}], "
                            "request_overhead_ms: {before: 2, after: 0.5, preprocess: 1.5}}}");
  config::ProfileFile p = config::parse_profile_file(n, "p.yaml");
  REQUIRE(p.front_end.overhead("a"));
  CHECK(p.front_end.overhead("a")->before == Approx(0.002));
  CHECK(p.front_end.overhead("a")->after == Approx(0.0005));
  CHECK(p.front_end.overhead("a")->preprocess == Approx(0.0015));
  config::ProfileFile back = config::parse_profile_file(config::profile_to_yaml(p), "back");
  CHECK(back.front_end.overhead("a")->preprocess == Approx(0.0015));
  YAML::Node bad = YAML::Load("models: {a: {size_bytes: 1, batch_latency_ms: [{batch: 1, mean: 5}], "
                              "request_overhead_ms: {before: 1, preprocess: 2}}}");
  CHECK_THROWS_WITH(config::parse_profile(bad, "p.yaml"), Contains("preprocess > before"));
}

TEST_CASE("engine and policies sections fill a ControllerConfig", "[simulator][config]") {
  YAML::Node n = YAML::Load(R"(
engine:
  workers: 4
  quantum_ms: 5
  max_batch: 8
  exec_tier: device
  tiers: {device: {models: 4, megabytes: 1000}, host: {bytes: 5000}}
  request_timeout_ms: 250
  queue_bound: 16
  slo_ms: 100
  contexts: 2
policies:
  batching: {name: rafiqi-ewma, alpha: 0.5, cap: [1, 2]}
  eviction: lfu
server: {port: 8080}
)");
  config::EngineSection s = config::parse_engine_section(n, "c.yaml");
  const ControllerConfig& c = s.control;
  CHECK(c.workers == 4);
  CHECK(c.quantum == Approx(0.005));
  CHECK(c.max_batch == 8);
  CHECK(c.exec_tier == Tier::Device);
  CHECK(c.budgets[int(Tier::Device)].models == 4);
  CHECK(c.budgets[int(Tier::Device)].bytes == 1000000000);
  CHECK(c.budgets[int(Tier::Host)].bytes == 5000);
  CHECK(c.budgets[int(Tier::Host)].models == UINT32_MAX);
  CHECK(c.request_timeout == Approx(0.25));
  CHECK(c.queue_bound == 16);
  CHECK(*s.slo == Approx(0.1));
  CHECK(s.contexts == 2);
  CHECK(c.batching.name == "rafiqi-ewma");
  CHECK(c.batching.params.get_double("alpha", 0) == 0.5);
  CHECK(c.batching.params.get_string("cap", "") == "1,2");
  CHECK(c.eviction.name == "lfu");
  CHECK(c.scheduling.name == "oldest-first");  // default kept

  // The emitted sections read back to the same values.
  YAML::Node out;
  config::emit_engine_section(s, out);
  config::EngineSection again = config::parse_engine_section(out, "out");
  CHECK(again.control.quantum == c.quantum);
  CHECK(again.control.budgets[int(Tier::Device)].bytes == 1000000000);
  CHECK(again.control.budgets[int(Tier::Host)].models == UINT32_MAX);
  CHECK(again.control.request_timeout == c.request_timeout);
  CHECK(again.control.batching.params.values() == c.batching.params.values());
  CHECK(*again.slo == *s.slo);

  YAML::Node d;
  config::EngineSection defaults = config::parse_engine_section(d);
  CHECK(defaults.control.workers == ControllerConfig{}.workers);
  CHECK(std::isinf(defaults.control.request_timeout));
}

TEST_CASE("config errors name the file, line and key", "[simulator][config]") {
  auto err = [](const char* yaml) {
    try {
      config::parse_engine_section(YAML::Load(yaml), "cfg.yaml");
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK_THAT(err("engine:\n  workers: 2\n  wrokers: 3\n"),
             Contains("cfg.yaml:3") && Contains("engine.wrokers") && Contains("unknown key"));
  CHECK_THAT(err("engine: {workers: 0}"), Contains("engine.workers"));
  CHECK_THAT(err("engine: {quantum_ms: fast}"), Contains("expected a number"));
  CHECK_THAT(err("engine: {exec_tier: disk}"), Contains("host or device"));
  CHECK_THAT(err("engine: {tiers: {disk: {models: 1}}}"), Contains("engine.tiers.disk"));
  CHECK_THAT(err("policies: {batching: {alpha: 1}}"), Contains("needs 'name'"));
  CHECK_THAT(err("policies: {admission: x}"), Contains("policies.admission"));
}

TEST_CASE("overrides (--set) write into nested mappings", "[simulator][config]") {
  YAML::Node root = YAML::Load("workload: {access: {type: sequential}}");
  config::apply_override(root, "workload.access={type: zipf, alpha: 1.1}");
  config::apply_override(root, "engine.workers=3");
  CHECK(root["workload"]["access"]["type"].as<std::string>() == "zipf");
  CHECK(root["workload"]["access"]["alpha"].as<double>() == 1.1);
  CHECK(root["engine"]["workers"].as<int>() == 3);
  CHECK_THROWS_AS(config::apply_override(root, "novalue"), ConfigError);
}

TEST_CASE("load time draws: exact without samples, else around the load time",
          "[simulator][profile]") {
  ModelProfile p = three_points();
  p.set_load_time(Tier::Disk, Tier::Host, 0.040);
  std::mt19937_64 rng(7), untouched(7);
  // No samples: the exact time, and the stream is not advanced.
  for (CostNoise n : {CostNoise::None, CostNoise::Normal, CostNoise::Empirical})
    CHECK(p.sample_load_seconds(Tier::Disk, Tier::Host, n, rng) == 0.040);
  CHECK(rng() == untouched());

  // Samples 10, 20, 30 ms (mean 20) around a load time of 40: draws are scaled by 2.
  p.load_samples[int(Tier::Disk)][int(Tier::Host)] = {0.010, 0.020, 0.030};
  CHECK(p.sample_load_seconds(Tier::Disk, Tier::Host, CostNoise::None, rng) == 0.040);
  std::map<long, int> counts;
  for (int i = 0; i < 30000; ++i)
    ++counts[std::lround(1e3 * p.sample_load_seconds(Tier::Disk, Tier::Host,
                                                       CostNoise::Empirical, rng))];
  REQUIRE(counts.size() == 3);
  for (long ms : {20L, 40L, 60L}) CHECK(counts[ms] == Approx(10000).epsilon(0.05));
  // Normal: samples 30, 40, 50 around 40 ms: mean 40, standard deviation 10 (truncation at
  // zero, 4 deviations below, is negligible).
  p.load_samples[int(Tier::Disk)][int(Tier::Host)] = {0.030, 0.040, 0.050};
  double sum = 0, sq = 0;
  const int n = 40000;
  for (int i = 0; i < n; ++i) {
    double x = p.sample_load_seconds(Tier::Disk, Tier::Host, CostNoise::Normal, rng);
    REQUIRE(x > 0);
    sum += x;
    sq += x * x;
  }
  CHECK(sum / n == Approx(0.040).epsilon(0.01));
  CHECK(std::sqrt(sq / n - (sum / n) * (sum / n)) == Approx(0.010).epsilon(0.03));

  // Read and written back in milliseconds; samples need their pair's load_ms.
  YAML::Node y = YAML::Load("models: {a: {size_bytes: 1, batch_latency_ms: [{batch: 1, mean: 5}], "
                            "load_ms: {disk->host: 40}, "
                            "load_samples_ms: {disk->host: [10, 20, 30]}}}");
  CostProfile c = config::parse_profile(y, "p.yaml");
  CHECK(c.models[0].load_samples[int(Tier::Disk)][int(Tier::Host)] ==
        std::vector<double>{0.010, 0.020, 0.030});
  CostProfile back = config::parse_profile(config::profile_to_yaml({c, {}}), "back");
  CHECK(back.models[0].load_samples[int(Tier::Disk)][int(Tier::Host)].size() == 3);
  YAML::Node bad = YAML::Load("models: {a: {size_bytes: 1, batch_latency_ms: [{batch: 1, mean: 5}], "
                              "load_ms: {disk->host: 40}, load_samples_ms: {host->device: [1]}}}");
  CHECK_THROWS_WITH(config::parse_profile(bad, "p.yaml"), Contains("no load_ms entry"));
  c.models[0].scale_costs(0.5);
  CHECK(c.models[0].load_samples[int(Tier::Disk)][int(Tier::Host)][2] == Approx(0.015));
}

TEST_CASE("request overhead spread and client cost: read, scaled, drawn", "[simulator][profile]") {
  YAML::Node n = YAML::Load("models: {a: {size_bytes: 1, batch_latency_ms: [{batch: 1, mean: 5}], "
                            "request_overhead_ms: {before: 2, preprocess: 1.5, client: 0.1, "
                            "stddev: 0.2}}}");
  config::ProfileFile c = config::parse_profile_file(n, "p.yaml");
  REQUIRE(c.front_end.overhead("a"));
  RequestOverhead m = *c.front_end.overhead("a");
  CHECK(m.client == Approx(0.0001));
  CHECK(m.stddev == Approx(0.0002));
  config::ProfileFile back = config::parse_profile_file(config::profile_to_yaml(c), "back");
  CHECK(back.front_end.overhead("a")->stddev == Approx(0.0002));
  CHECK(back.front_end.overhead("a")->client == Approx(0.0001));

  std::mt19937_64 rng(3), untouched(3);
  CHECK(m.sample_preprocess(CostNoise::None, rng) == 0.0015);
  CHECK(rng() == untouched());
  double sum = 0, sq = 0;
  const int draws = 40000;
  for (int i = 0; i < draws; ++i) {
    double x = m.sample_preprocess(CostNoise::Normal, rng);
    REQUIRE(x >= 0.00015);
    sum += x;
    sq += x * x;
  }
  CHECK(sum / draws == Approx(0.0015).epsilon(0.01));
  CHECK(std::sqrt(sq / draws - (sum / draws) * (sum / draws)) == Approx(0.0002).epsilon(0.03));
  m.scale(2);
  CHECK(m.stddev == Approx(0.0004));
  CHECK(m.client == Approx(0.0002));
}

TEST_CASE("a profile file read again gives its current text's profile", "[simulator][profile]") {
  // Runs of a sweep read one file again and again (parsed once); one rewritten in between, at
  // the same size, must read as written now, and one that breaks must fail as before.
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("servelab-profile-" + std::to_string(::getpid()) + ".yaml"))
                               .string();
  auto write = [&](const std::string& text) { std::ofstream(path) << text; };
  const std::string a = "models: {net: {size_bytes: 1, batch_latency_ms: [{batch: 1, mean: 8}]}}\n";
  const std::string b = "models: {net: {size_bytes: 1, batch_latency_ms: [{batch: 1, mean: 9}]}}\n";
  write(a);
  CHECK(config::load_profile(path).find("net")->batch_latency(1) == Approx(0.008));
  CHECK(config::load_profile(path).find("net")->batch_latency(1) == Approx(0.008));
  write(b);
  CHECK(config::load_profile(path).find("net")->batch_latency(1) == Approx(0.009));
  write("models: {net: {size_bytes: 1, batch_latency_ms: [{batch: 1, mean: -9}]}}\n");
  CHECK_THROWS_AS(config::load_profile(path), ConfigError);
  std::filesystem::remove(path);
  CHECK_THROWS_WITH(config::load_profile(path), Contains("cannot read"));
}
