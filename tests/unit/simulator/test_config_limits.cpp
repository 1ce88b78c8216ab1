// The limits every config file is read under (config/yaml_limits.h): an alias bomb, a flood of
// keys and deep nesting are refused with a message that names the limit; a key written twice
// is found however many keys the mapping has. Each case runs under a watchdog that only keeps
// a regression from hanging the suite.
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include "config/run_config.h"
#include "config/yaml_limits.h"
#include "config/yaml_util.h"
#include "tests/support/temp_dir.h"
#include "tests/support/watchdog.h"

using namespace servelab;
using Catch::Matchers::Contains;

namespace {

// `lines` levels of a billion-laughs bomb: each anchor lists the previous one ten times.
std::string alias_bomb(int lines) {
  std::ostringstream out;
  out << "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < lines; ++i) {
    out << "a" << i << ": &a" << i << " [";
    for (int k = 0; k < 10; ++k) out << (k ? ", " : "") << "*a" << (i - 1);
    out << "]\n";
  }
  return out.str();
}

// A run config file holding `text`, read as `servelab simulate` reads one.
std::string load_error(const std::string& text) {
  auto dir = std::make_shared<testutil::TempDir>("config-limits");
  const std::string path = (*dir / "c.yaml").string();
  std::ofstream(path) << text;
  return testutil::error_within([dir, path] { config::load_run_config(path); });
}

}  // namespace

TEST_CASE("config limits: an alias bomb is refused naming the node limit", "[config][limits]") {
  const std::string bomb = alias_bomb(9);
  CHECK(bomb.size() < 1000);
  const std::string error = load_error(bomb);
  CHECK_THAT(error, Contains("c.yaml:") && Contains(std::to_string(config::kMaxYamlNodes)) &&
                        Contains("alias"));
  // The same shape, small enough, still reads.
  CHECK_NOTHROW(config::load_text(alias_bomb(3), "small.yaml"));
}

TEST_CASE("config limits: a key written twice among many is named with its line",
          "[config][limits]") {
  std::ostringstream text;
  for (int i = 0; i < 60000; ++i) text << "k" << i << ": " << i << "\n";
  text << "k7: again\n";
  const std::string error = load_error(text.str());
  CHECK_THAT(error, Contains("c.yaml:60001") && Contains("duplicate key 'k7'"));
}

TEST_CASE("config limits: a flood of keys is refused naming the node limit", "[config][limits]") {
  std::ostringstream text;
  for (uint64_t i = 0; i < config::kMaxYamlNodes; ++i) text << "k" << i << ": 1\n";
  CHECK_THAT(load_error(text.str()), Contains(std::to_string(config::kMaxYamlNodes) + " nodes"));
}

TEST_CASE("config limits: deep nesting says it is too deep, with the limit", "[config][limits]") {
  const std::string limit = std::to_string(config::kMaxYamlDepth) + " levels";
  // Flow style, past yaml-cpp's own guard (which says only "bad file").
  CHECK_THAT(load_error("a: " + std::string(20000, '[') + std::string(20000, ']') + "\n"),
             Contains("nested deeper than " + limit));
  // Block style, below yaml-cpp's guard.
  std::string block = "a:\n";
  for (int i = 1; i < 200; ++i) block += std::string(2 * i, ' ') + "b" + std::to_string(i) + ":\n";
  CHECK_THAT(load_error(block), Contains("c.yaml:") && Contains("nested deeper than " + limit));
  CHECK_NOTHROW(config::load_text("a: [[[[1]]]]\n", "shallow.yaml"));
}
