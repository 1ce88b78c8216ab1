// Finds where a JSON text stops parsing by reading it once more through a SAX handler that
// keeps the key path of the value being read.
#include "engine/server/json_error.h"

#include <vector>

#include <nlohmann/json.hpp>

#include "engine/server/http_message.h"

namespace servelab::server {

namespace {

using json = nlohmann::json;

// Tracks the path: one entry per open container, a key or an array index.
class PathTracker : public nlohmann::json_sax<json> {
 public:
  bool null() override { return value(); }
  bool boolean(bool) override { return value(); }
  bool number_integer(number_integer_t) override { return value(); }
  bool number_unsigned(number_unsigned_t) override { return value(); }
  bool number_float(number_float_t, const string_t&) override { return value(); }
  bool string(string_t&) override { return value(); }
  bool binary(binary_t&) override { return value(); }
  bool start_object(std::size_t) override { return open(false); }
  bool key(string_t& k) override {
    path_.back().key = k;
    return true;
  }
  bool end_object() override { return close(); }
  bool start_array(std::size_t) override { return open(true); }
  bool end_array() override { return close(); }
  bool parse_error(std::size_t position, const std::string& token,
                   const nlohmann::detail::exception& e) override {
    position_ = position;
    token_ = token;
    overflow_ = e.id == 406;  // out_of_range.406: a number beyond a double
    reason_ = e.what();
    return false;
  }

  std::string message() const {
    const std::string where = path();
    if (overflow_)
      return "'" + (where.empty() ? std::string("(the document)") : where) +
             "' is out of range: " + echo_value(token_, 40) + " does not fit a double";
    return "not valid JSON at byte " + std::to_string(position_) +
           (where.empty() ? "" : " (in '" + where + "')") + ": " + echo_value(reason_, 200);
  }

 private:
  struct Level {
    bool array = false;
    size_t index = 0;
    std::string key;
  };

  bool value() {
    if (!path_.empty() && path_.back().array) ++path_.back().index;
    return true;
  }
  bool open(bool array) {
    value();
    path_.push_back({array, 0, ""});
    return true;
  }
  bool close() {
    path_.pop_back();
    return true;
  }
  // The dotted path of the value being read: keys, and [i] for the element an array is at
  // (an inner array's count of elements started is one past the container being read).
  std::string path() const {
    std::string out;
    for (size_t i = 0; i < path_.size(); ++i) {
      const Level& l = path_[i];
      const size_t at = i + 1 < path_.size() && l.index > 0 ? l.index - 1 : l.index;
      if (l.array) out += "[" + std::to_string(at) + "]";
      else if (!l.key.empty()) out += (out.empty() ? "" : ".") + echo_value(l.key, 40);
    }
    return out;
  }

  std::vector<Level> path_;
  size_t position_ = 0;
  std::string token_;
  std::string reason_;
  bool overflow_ = false;
};

}  // namespace

std::string json_error(std::string_view text) {
  PathTracker tracker;
  if (json::sax_parse(text, &tracker)) return "";
  return tracker.message();
}

}  // namespace servelab::server
