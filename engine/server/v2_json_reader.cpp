#include "engine/server/v2_json_reader.h"

#include <algorithm>
#include <cfloat>

#include "engine/server/http_message.h"
#include "engine/server/v2_protocol.h"

namespace servelab::server {
namespace {

using json = ArenaJson;

[[noreturn]] void bad(const std::string& msg) { throw HttpError(400, msg); }

// Where a container sits, as far as this reader cares: the root object, the "inputs" array,
// its first element, that input's "shape" array, or anything else.
enum class Place { Other, Root, Inputs, Input, Shape };
enum class Key { Other, Inputs, Shape };

struct Frame {
  Place place = Place::Other;
  Key key = Key::Other;   // objects: the last key read
  size_t elements = 0;    // arrays: values read so far
};

// The SAX handler: forwards everything but the input's data to nlohmann's tree builder.
class Reader {
 public:
  using string_t = json::string_t;

  Reader(V2JsonDocument* doc, const std::string& input_name, int max_nesting,
         size_t max_values, size_t text_size)
      : doc_(doc), dom_(doc->tree, true), input_name_(input_name), max_nesting_(max_nesting),
        max_values_(max_values), text_size_(text_size) {}

  bool null() { return scalar() && dom_.null(); }
  bool boolean(bool v) { return scalar() && dom_.boolean(v); }
  bool number_integer(json::number_integer_t v) {
    if (data_depth_) return push(static_cast<double>(v));
    note_shape(v >= 0, v);
    return number() && dom_.number_integer(v);
  }
  bool number_unsigned(json::number_unsigned_t v) {
    if (data_depth_) return push(static_cast<double>(v));
    note_shape(v <= INT64_MAX, static_cast<int64_t>(v));
    return number() && dom_.number_unsigned(v);
  }
  bool number_float(json::number_float_t v, const string_t& s) {
    if (data_depth_) return push(v);
    note_shape(false, 0);
    return number() && dom_.number_float(v, s);
  }
  bool string(string_t& v) { return scalar() && dom_.string(v); }
  bool binary(json::binary_t& v) { return scalar() && dom_.binary(v); }

  bool start_object(std::size_t n) {
    if (data_depth_) not_a_number();
    note_shape(false, 0);
    if (frames_.empty()) {
      frames_.push_back({Place::Root});
      return count() && dom_.start_object(n);
    }
    value(false);
    const Frame& parent = frames_.back();
    frames_.push_back({parent.place == Place::Inputs ? Place::Input : Place::Other});
    return dom_.start_object(n);
  }
  bool key(string_t& k) {
    Frame& f = frames_.back();
    f.key = k == "inputs" ? Key::Inputs : k == "shape" ? Key::Shape : Key::Other;
    if (f.place == Place::Input && k == "data") {
      data_key_ = true;  // forwarded only if its value is not an array (value())
      return true;
    }
    return count() && dom_.key(k);
  }
  bool end_object() {
    frames_.pop_back();
    return dom_.end_object();
  }
  bool start_array(std::size_t n) {
    if (data_depth_) {
      if (++data_depth_ > max_nesting_)
        bad("input \"data\" is nested deeper than " + std::to_string(max_nesting_) + " arrays");
      return true;
    }
    if (frames_.empty()) bad("the request must be a JSON object");
    note_shape(false, 0);
    if (value(true)) return true;  // the input's data: read by push()
    const Frame& parent = frames_.back();
    Place place = Place::Other;
    if (parent.place == Place::Root && parent.key == Key::Inputs) place = Place::Inputs;
    if (parent.place == Place::Input && parent.key == Key::Shape) place = Place::Shape;
    if (place == Place::Shape) shape_.clear(), shape_ok_ = true, shape_done_ = false;
    frames_.push_back({place});
    return dom_.start_array(n);
  }
  bool end_array() {
    if (data_depth_) {
      --data_depth_;
      return true;
    }
    if (frames_.back().place == Place::Shape) shape_done_ = shape_ok_;
    frames_.pop_back();
    return dom_.end_array();
  }
  template <class Exception>
  bool parse_error(std::size_t, const std::string&, const Exception&) {
    bad("the request body is not valid JSON");
  }

 private:
  // A value other than a number, outside the data: checked and counted.
  bool scalar() {
    if (data_depth_) not_a_number();
    note_shape(false, 0);
    if (frames_.empty()) bad("the request must be a JSON object");
    value(false);
    return true;
  }

  // A number outside the data: checked and counted.
  bool number() {
    if (frames_.empty()) bad("the request must be a JSON object");
    value(false);
    return true;
  }

  // Bookkeeping of a value about to start (`array`: an array). Returns true when it is the
  // input's data array, which is then read into `values` instead of the tree.
  bool value(bool array) {
    Frame& parent = frames_.back();
    ++parent.elements;
    if (parent.place == Place::Inputs && parent.elements > 1)
      bad("\"inputs\" must be an array of one tensor ('" + input_name_ + "')");
    if (data_key_) {
      data_key_ = false;
      if (array) return start_data();
      string_t k = "data";
      dom_.key(k);
    }
    count();
    return false;
  }

  bool count() {
    if (++tree_values_ > kMaxTreeValues)
      bad("the request holds more than " + std::to_string(kMaxTreeValues) +
          " JSON values besides its input data");
    return true;
  }

  bool start_data();  // enters the data array; true
  bool push(double d);
  void note_shape(bool ok, int64_t v);
  [[noreturn]] static void not_a_number() { bad("input \"data\" must hold only numbers (FP32)"); }

  V2JsonDocument* doc_;
  nlohmann::detail::json_sax_dom_parser<json> dom_;
  const std::string& input_name_;
  const int max_nesting_;
  const size_t max_values_, text_size_;
  std::vector<Frame> frames_;
  bool data_key_ = false;       // the input's "data" key was read; its value comes next
  int data_depth_ = 0;          // > 0 inside the input's data: arrays open there
  size_t tree_values_ = 0;
  size_t cap_ = 0;              // most values the data may hold
  const char* over_cap_ = "";   // the message when it holds more
  std::vector<int64_t> shape_;  // the input's "shape", once read
  bool shape_ok_ = false, shape_done_ = false;
};

bool Reader::start_data() {
  if (doc_->has_data) bad("input '" + input_name_ + "' has \"data\" twice");
  doc_->has_data = true;
  data_depth_ = 1;
  const int64_t expected = shape_done_ ? v2_element_count(shape_, int64_t(max_values_)) : -1;
  if (expected >= 0) {
    cap_ = static_cast<size_t>(expected);
    over_cap_ = "input \"data\" has more values than its shape holds";
  } else {
    cap_ = max_values_;
    over_cap_ = "input \"data\" has more values than this server takes";
  }
  // Each value takes at least two bytes of text ("0,"): a shape cannot reserve past the body.
  doc_->values.reserve(std::min(cap_, text_size_ / 2 + 1));
  return true;
}

bool Reader::push(double d) {
  if (!(d >= -FLT_MAX && d <= FLT_MAX)) bad("input \"data\" holds a value outside FP32");
  if (doc_->values.size() == cap_) bad(over_cap_);
  doc_->values.push_back(static_cast<float>(d));
  return true;
}

// A number of the input's "shape" array (`ok`: a size, i.e. a non-negative integer).
void Reader::note_shape(bool ok, int64_t v) {
  if (frames_.empty() || frames_.back().place != Place::Shape) return;
  if (!ok || shape_.size() == 16) shape_ok_ = false;
  else shape_.push_back(v);
}

}  // namespace

V2JsonDocument read_v2_json(std::string_view text, const std::string& input_name,
                            int max_nesting, size_t max_values) {
  V2JsonDocument doc;
  Reader reader(&doc, input_name, max_nesting, max_values, text.size());
  if (!json::sax_parse(text, &reader)) bad("the request body is not valid JSON");
  return doc;
}

}  // namespace servelab::server
