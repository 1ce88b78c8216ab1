// The Beast body type of the requests HttpTransport reads (http_session.cpp): a std::string
// like beast::http::string_body, whose reader appends each incoming buffer instead of
// zero-filling the string first and then copying over the zeros (string_body's put() does
// resize() then copy: a memset of every body byte, 12 KB per v2 tensor request).
// Limits stay the parser's: body_limit() is checked against Content-Length before init() and
// against the bytes received before put(). Internal to the transport; Beast stays out of
// http_transport.h.
#pragma once

#include <boost/beast/core/buffers_range.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/optional.hpp>
#include <cstdint>
#include <string>

namespace servelab::server::transport {

struct RequestBody {
  using value_type = std::string;

  static std::uint64_t size(const value_type& body) { return body.size(); }

  // Reads a body into the string: reserves Content-Length (already bounded by the parser's
  // body limit) and appends what arrives.
  class reader {
   public:
    template <bool isRequest, class Fields>
    reader(boost::beast::http::header<isRequest, Fields>&, value_type& body) : body_(body) {}

    void init(const boost::optional<std::uint64_t>& length, boost::beast::error_code& ec) {
      ec = {};
      if (!length) return;
      if (*length > body_.max_size()) {
        ec = boost::beast::http::error::buffer_overflow;
        return;
      }
      body_.reserve(static_cast<size_t>(*length));
    }

    template <class ConstBufferSequence>
    std::size_t put(const ConstBufferSequence& buffers, boost::beast::error_code& ec) {
      const std::size_t extra = boost::beast::buffer_bytes(buffers);
      if (extra > body_.max_size() - body_.size()) {
        ec = boost::beast::http::error::buffer_overflow;
        return 0;
      }
      ec = {};
      for (auto b : boost::beast::buffers_range_ref(buffers))
        body_.append(static_cast<const char*>(b.data()), b.size());
      return extra;
    }

    void finish(boost::beast::error_code& ec) { ec = {}; }

   private:
    value_type& body_;
  };
};

}  // namespace servelab::server::transport
