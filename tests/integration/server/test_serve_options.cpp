// `servelab serve` with out-of-range numeric options (issue 14): the real binary exits with
// status 2 and names the option and its range, before it allocates anything for the value
// (no bare std::bad_alloc, no server that never finishes a batch).
#include <catch2/catch.hpp>
#include <fstream>

#include "tests/integration/server/serve_process.h"
#include "tests/integration/server/server_fixture.h"

using namespace servelab::testing;

namespace {

struct BadOption {
  std::vector<std::string> args;
  std::string expected;  // a part of the message
};

// Runs `servelab serve` with `args` on a fresh store and a free port; it must refuse them.
// Returns its standard error.
std::string expect_refused(const TempDir& dir, const BadOption& c, int n) {
  std::vector<std::string> args = {"--store", (dir.path / "store").string()};
  bool has_port = false;
  for (const auto& a : c.args) has_port = has_port || a.rfind("--port", 0) == 0;
  if (!has_port) args.insert(args.end(), {"--port", "0"});
  args.insert(args.end(), c.args.begin(), c.args.end());
  ServeProcess p(args, dir.path / ("case" + std::to_string(n)));
  auto rc = p.wait_exit(std::chrono::seconds(30));
  if (!rc) p.kill9();  // it started serving (or hung): the option was accepted
  const std::string err = p.err();
  INFO("args: " << Catch::Detail::stringify(c.args) << "\nstderr: " << err << "\nstdout: "
                << p.out());
  REQUIRE(rc.has_value());
  CHECK(*rc == 2);
  CHECK(err.find(c.expected) != std::string::npos);
  CHECK(err.find("bad_alloc") == std::string::npos);
  CHECK(p.out().find("listening on") == std::string::npos);
  return err;
}

}  // namespace

TEST_CASE("serve refuses out-of-range numeric options with status 2 and the option's range",
          "[server][options]") {
  TempDir dir;
  const std::vector<BadOption> cases = {
      {{"--workers", "1000000000"}, "--workers must be between 1 and 4096 (got 1000000000)"},
      {{"--workers", "0"}, "--workers must be between 1 and 4096"},
      {{"--workers", "99999999999"}, "--workers"},  // does not fit 32 bits
      {{"--port", "70000"}, "--port must be between 0 and 65535 (got 70000)"},
      {{"--processes", "0"}, "--processes must be between 1 and 64 (got 0)"},
      {{"--processes", "65"}, "--processes must be between 1 and 64 (got 65)"},
      {{"--port", "65535", "--processes", "2"}, "would need ports above 65535"},
      {{"--port=-1"}, "--port must not be negative (got -1)"},  // not "got 4294967295"
      {{"--port", "-1"}, "--port must not be negative (got -1)"},
      {{"--max-body-bytes", "-5"}, "--max-body-bytes must not be negative (got -5)"},
      {{"--max-json-body-bytes", "100"}, "--max-json-body-bytes must be between 1024 and"},
      {{"--idle-trim-ms", "100000000"}, "--idle-trim-ms must be between 0 and 86400000"},
      {{"--queue-bound", "-1"}, "--queue-bound must not be negative (got -1)"},
      {{"--model-root", "/nonexistent"}, "--model-root '/nonexistent' is not a directory"},
      {{"--port", "http"}, "--port"},
      {{"--quantum-ms", "1e12"}, "--quantum-ms must be between 0 and 3600000"},
      {{"--quantum-ms", "nan"}, "--quantum-ms must be between 0 and 3600000"},
      {{"--quantum-ms", "-5"}, "--quantum-ms must be between 0 and 3600000"},
      {{"--contexts", "100000"}, "--contexts must be between 1 and 1024"},
      {{"--io-threads", "0"}, "--io-threads must be between 1 and 4096"},
      {{"--max-batch", "0"}, "--max-batch must be between 1 and 65536"},
      {{"--intra-op-threads", "100000"}, "--intra-op-threads must be between 1 and 256"},
      {{"--request-timeout-ms", "0"}, "--request-timeout-ms must be between 0.001 and 86400000"},
      {{"--v2-max-batch", "1000000"}, "--v2-max-batch must be between 1 and 4096"},
      {{"--max-image-aspect", "0.5"}, "--max-image-aspect must be between 1 and"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    DYNAMIC_SECTION("case " << i) { expect_refused(dir, cases[i], static_cast<int>(i)); }
  }
}

// A config file's values have the options' ranges (config/bounds.h), and the message names
// the file's key and line, not an option the user did not give.
TEST_CASE("serve refuses an out-of-range engine value of its config file with status 2",
          "[server][options]") {
  TempDir dir;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"workers: 1000000000", "engine.workers: must be an integer in 1..4096"},
      {"quantum_ms: 3600001", "engine.quantum_ms: must be between 0 and 3600000 ms"},
      {"request_timeout_ms: 0", "engine.request_timeout_ms: must be between 0.001 and 86400000"},
      {"contexts: 1025", "engine.contexts: must be an integer in 1..1024"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    DYNAMIC_SECTION("case " << i) {
      const auto config = dir.path / ("serve" + std::to_string(i) + ".yaml");
      std::ofstream(config) << "engine:\n  " << cases[i].first << "\n";
      const std::string err =
          expect_refused(dir, {{"--config", config.string()}, cases[i].second}, 100 + int(i));
      CHECK(err.find("must be between 1 and") == std::string::npos);  // no option blamed
    }
  }
}

TEST_CASE("serve with in-range options starts, serves and stops with status 0",
          "[server][options]") {
  TempDir dir;  // the counterpart: the refusals above are about the values, not the harness
  ServeProcess p({"--store", (dir.path / "store").string(), "--port", "0", "--workers", "1024",
                  "--quantum-ms", "60000", "--io-threads", "1"},
                 dir.path / "ok");
  const uint16_t port = p.wait_port(std::chrono::seconds(60));
  INFO("stderr: " << p.err());
  REQUIRE(port != 0);
  CHECK(HttpClient(port).get("/health").status == 200);
  CHECK(p.stop(std::chrono::seconds(30)));
}
