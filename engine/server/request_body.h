// The Beast body type of the requests HttpTransport reads (http_session.cpp).
//
// Bytes are appended as they arrive instead of zero-filling first and copying over the zeros
// (string_body's put() does resize() then copy: a memset of every body byte).
//
// The KServe v2 binary-tensor extension: a POST to a path ending in "/infer" with an
// Inference-Header-Content-Length of N and a Content-Length body whose bytes after the N of
// the JSON header are whole FP32 values is split while it is read: the JSON header goes to
// `bytes` and the values straight into `tensor`, which the engine then takes as the input
// (before, the body was a string that the v2 parser copied into a float vector: a second
// 12 KB allocation and copy per request). Everything else is read into `bytes` whole.
//
// Limits stay the parser's: body_limit() is checked against Content-Length before init() and
// against the bytes received before put(). Internal to the transport; Beast stays out of
// http_transport.h.
#pragma once

#include <bit>
#include <boost/beast/core/buffers_range.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/optional.hpp>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace servelab::server::transport {

// The tensor values are the wire's little-endian bytes as they are.
static_assert(std::endian::native == std::endian::little);

struct RequestBody {
  struct value_type {
    std::string bytes;          // the body, or its JSON header when split
    std::vector<float> tensor;  // the values after the JSON header, when split
    bool split = false;
  };

  static std::uint64_t size(const value_type& body) {
    return body.bytes.size() + body.tensor.size() * sizeof(float);
  }

  // Whether the request is a POST to a path ending in "/infer" (a KServe v2 infer request).
  template <class Fields>
  static bool is_infer(const boost::beast::http::header<true, Fields>& h) {
    if (h.method() != boost::beast::http::verb::post) return false;
    std::string_view target(h.target().data(), h.target().size());
    target = target.substr(0, target.find('?'));
    constexpr std::string_view kInfer = "/infer";
    return target.size() >= kInfer.size() &&
           target.substr(target.size() - kInfer.size()) == kInfer;
  }

  // Where a v2 binary-tensor body of this request would be split: the value of its
  // Inference-Header-Content-Length, for POST .../infer; nothing otherwise.
  template <class Fields>
  static std::optional<std::uint64_t> split_point(
      const boost::beast::http::header<true, Fields>& h) {
    if (!is_infer(h)) return std::nullopt;
    auto it = h.find("Inference-Header-Content-Length");
    if (it == h.end()) return std::nullopt;
    const auto v = it->value();
    if (v.empty() || v.size() > 18) return std::nullopt;
    std::uint64_t n = 0;
    for (char c : v) {
      if (c < '0' || c > '9') return std::nullopt;
      n = n * 10 + static_cast<std::uint64_t>(c - '0');
    }
    return n;
  }

  class reader {
   public:
    template <bool isRequest, class Fields>
    reader(boost::beast::http::header<isRequest, Fields>& h, value_type& body) : body_(body) {
      if constexpr (isRequest) split_at_ = split_point(h);
    }

    // Reserves Content-Length (already bounded by the parser's body limit); splits when the
    // bytes after the JSON header are whole floats.
    void init(const boost::optional<std::uint64_t>& length, boost::beast::error_code& ec) {
      ec = {};
      if (!length) return;
      if (*length > body_.bytes.max_size()) {
        ec = boost::beast::http::error::buffer_overflow;
        return;
      }
      if (split_at_ && *split_at_ < *length && (*length - *split_at_) % sizeof(float) == 0) {
        body_.split = true;
        head_ = static_cast<size_t>(*split_at_);
        body_.bytes.reserve(head_);
        body_.tensor.reserve(static_cast<size_t>((*length - *split_at_) / sizeof(float)));
        return;
      }
      body_.bytes.reserve(static_cast<size_t>(*length));
    }

    template <class ConstBufferSequence>
    std::size_t put(const ConstBufferSequence& buffers, boost::beast::error_code& ec) {
      const std::size_t extra = boost::beast::buffer_bytes(buffers);
      if (extra > body_.bytes.max_size() - size(body_)) {
        ec = boost::beast::http::error::buffer_overflow;
        return 0;
      }
      ec = {};
      for (auto b : boost::beast::buffers_range_ref(buffers)) {
        const char* p = static_cast<const char*>(b.data());
        size_t n = b.size();
        if (body_.split) {
          const size_t to_head = std::min(n, head_ - body_.bytes.size());
          body_.bytes.append(p, to_head);
          put_values(p + to_head, n - to_head);
        } else {
          body_.bytes.append(p, n);
        }
      }
      return extra;
    }

    void finish(boost::beast::error_code& ec) {
      ec = {};
      if (carried_ != 0) ec = boost::beast::http::error::partial_message;
    }

   private:
    // Appends raw value bytes; a value cut between two buffers waits in `carry_`.
    void put_values(const char* p, size_t n) {
      std::vector<float>& t = body_.tensor;
      if (carried_ != 0) {  // complete the value cut at the end of the last buffer
        const size_t take = std::min(n, sizeof(float) - carried_);
        std::memcpy(carry_ + carried_, p, take);
        carried_ += take;
        p += take;
        n -= take;
        if (carried_ < sizeof(float)) return;
        float v;
        std::memcpy(&v, carry_, sizeof v);
        t.push_back(v);
        carried_ = 0;
      }
      const size_t whole = n / sizeof(float);
      if (whole > 0) {
        const size_t old = t.size();
        t.resize(old + whole);  // within the reserve: no reallocation
        std::memcpy(t.data() + old, p, whole * sizeof(float));
      }
      carried_ = n - whole * sizeof(float);
      std::memcpy(carry_, p + whole * sizeof(float), carried_);
    }

    value_type& body_;
    std::optional<std::uint64_t> split_at_;
    size_t head_ = 0;
    char carry_[sizeof(float)] = {};
    size_t carried_ = 0;
  };
};

}  // namespace servelab::server::transport
