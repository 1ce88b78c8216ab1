#include "config/yaml_limits.h"

#include <sstream>
#include <unordered_set>
#include <vector>

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/mark.h>
#include <yaml-cpp/parser.h>

#include "engine/control/policy_params.h"

namespace servelab::config {

namespace {

// Counts the expanded tree as the parser reports it, without building it.
class LimitCounter : public YAML::EventHandler {
 public:
  explicit LimitCounter(const std::string& name) : name_(name) {}

  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    leaf(mark, anchor, nullptr);
  }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    const uint64_t size = anchor < sizes_.size() ? sizes_[anchor] : 1;
    child(mark, nullptr);
    add(mark, size);
  }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                const std::string& value) override {
    leaf(mark, anchor, &value);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    open(mark, anchor, false);
  }
  void OnSequenceEnd() override { close(); }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    open(mark, anchor, true);
  }
  void OnMapEnd() override { close(); }

 private:
  struct Frame {
    bool is_map = false;
    uint64_t children = 0;                // events directly inside: keys and values alternate
    uint64_t start = 0;                   // nodes_ when it opened
    YAML::anchor_t anchor = 0;
    std::unordered_set<std::string> keys; // a mapping's scalar keys so far
  };

  [[noreturn]] void fail(const YAML::Mark& mark, const std::string& msg) const {
    throw ConfigError(name_ + ":" + std::to_string(mark.line + 1) + ": " + msg);
  }

  void add(const YAML::Mark& mark, uint64_t n) {
    nodes_ += n;
    if (nodes_ > kMaxYamlNodes)
      fail(mark, "the document expands to more than " + std::to_string(kMaxYamlNodes) +
                     " nodes (the limit; an alias counts once per use with all it names)");
  }

  // Registers a node as the next child of the open collection; `key` is its text when it is
  // a scalar, checked against the mapping's keys when it stands in a key's place.
  void child(const YAML::Mark& mark, const std::string* key) {
    if (stack_.empty()) return;
    Frame& f = stack_.back();
    const bool is_key = f.is_map && f.children % 2 == 0;
    ++f.children;
    if (is_key && key && !f.keys.insert(*key).second)
      fail(mark, "duplicate key '" + *key + "' (each key may appear once)");
  }

  void remember(YAML::anchor_t anchor, uint64_t size) {
    if (anchor == YAML::NullAnchor) return;
    if (sizes_.size() <= anchor) sizes_.resize(anchor + 1, 1);
    sizes_[anchor] = size;
  }

  void leaf(const YAML::Mark& mark, YAML::anchor_t anchor, const std::string* value) {
    child(mark, value);
    add(mark, 1);
    remember(anchor, 1);
  }

  void open(const YAML::Mark& mark, YAML::anchor_t anchor, bool is_map) {
    child(mark, nullptr);
    add(mark, 1);
    if (stack_.size() >= kMaxYamlDepth)
      fail(mark, "nested deeper than " + std::to_string(kMaxYamlDepth) +
                     " levels (the limit for a config file)");
    Frame f;
    f.is_map = is_map;
    f.start = nodes_ - 1;
    f.anchor = anchor;
    stack_.push_back(std::move(f));
  }

  void close() {
    remember(stack_.back().anchor, nodes_ - stack_.back().start);
    stack_.pop_back();
  }

  const std::string& name_;
  uint64_t nodes_ = 0;
  std::vector<Frame> stack_;
  std::vector<uint64_t> sizes_;  // by anchor id: the nodes its node stands for
};

}  // namespace

void check_yaml_text(const std::string& text, const std::string& name) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  LimitCounter counter(name);
  parser.HandleNextDocument(counter);
}

}  // namespace servelab::config
