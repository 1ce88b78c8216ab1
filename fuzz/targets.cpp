#include "fuzz/targets.h"

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/server/group_answer.h"
#include "engine/server/group_definition.h"
#include "engine/server/image_guard.h"
#include "engine/server/model_store.h"
#include "engine/server/multipart.h"
#include "engine/server/register_request.h"
#include "engine/server/route_table.h"
#include "engine/server/v2_protocol.h"

namespace servelab::fuzz {
namespace http = boost::beast::http;
using namespace servelab::server;

namespace {

std::string_view view(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// The server's route table with handlers that only read their parameters.
const RouteTable& server_routes() {
  static const RouteTable routes = [] {
    RouteTable r;
    auto touch = [](HttpRequest&, const PathParams& p, Reply reply) {
      for (const auto& [k, v] : p) (void)model_name_problem(v);
      reply(json_response(200, "{}"));
    };
    for (const char* route : {"POST /register", "GET /models", "GET /models/{name}",
                              "DELETE /models/{name}", "POST /classify/{name}", "GET /health",
                              "GET /metrics", "GET /v2", "GET /v2/health/live",
                              "GET /v2/health/ready", "GET /v2/models/{name}",
                              "GET /v2/models/{name}/ready", "POST /v2/models/{name}/infer",
                              "POST /v2/models/{name}/versions/{version}/infer",
                              "POST /groups", "GET /groups", "GET /groups/{name}",
                              "DELETE /groups/{name}"}) {
      std::string_view s(route);
      size_t sp = s.find(' ');
      r.add(std::string(s.substr(0, sp)), std::string(s.substr(sp + 1)), touch);
    }
    return r;
  }();
  return routes;
}

}  // namespace

int http_request(const uint8_t* data, size_t size) {
  http::request_parser<http::string_body> parser;
  parser.header_limit(64 * 1024);
  parser.body_limit(1 << 20);
  parser.eager(true);
  boost::beast::error_code ec;
  parser.put(boost::asio::buffer(data, size), ec);
  if (ec || !parser.is_header_done()) return 0;
  const auto& msg = parser.get();
  HttpRequest req;
  req.method = std::string(msg.method_string());
  req.target = std::string(msg.target());
  split_target(req.target, &req.path, &req.query);
  for (const auto& f : msg) req.headers.emplace_back(std::string(f.name_string()), f.value());
  req.body = msg.body();
  bool answered = false;
  server_routes().dispatch(std::move(req), [&](HttpResponse) { answered = true; });
  if (!answered) __builtin_trap();  // every request gets exactly one answer
  return 0;
}

int multipart(const uint8_t* data, size_t size) {
  std::string_view in = view(data, size);
  size_t eol = in.find('\n');
  std::string_view type = in.substr(0, eol);
  std::string_view body = eol == std::string_view::npos ? std::string_view{} : in.substr(eol + 1);
  try {
    for (const auto& part : parse_multipart(type, body)) (void)part.data.size();
  } catch (const MultipartError&) {
  }
  (void)multipart_boundary(type);
  return 0;
}

int register_request(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static const char* kTypes[] = {"application/json", "multipart/form-data; boundary=XyZ", "",
                                 "text/plain"};
  HttpRequest req;
  req.method = "POST";
  req.headers.emplace_back("content-type", kTypes[data[0] % 4]);
  req.body = std::string(view(data + 1, size - 1));
  try {
    RegisterRequest r = parse_register_request(req);
    (void)model_name_problem(r.name);
    (void)preprocess_to_json(r.preprocess).dump();
  } catch (const HttpError&) {
  }
  return 0;
}

int image_guard(const uint8_t* data, size_t size) {
  ImageHeader h;
  (void)read_image_header(view(data, size), &h);
  ImageLimits small;
  small.max_bytes = 1 << 16;
  small.max_pixels = 1 << 20;
  small.max_side = 4096;
  small.max_aspect = 4;
  std::string why;
  (void)check_image(view(data, size), small, &why);
  (void)check_image(view(data, size), ImageLimits{}, nullptr);
  return 0;
}

namespace {

// The items of `body` parsed with its binary data split off after `head` bytes, as the
// transport's request body does (request_body.h); nothing when that parse refuses it.
std::optional<std::vector<std::vector<float>>> split_items(std::string_view body, size_t head,
                                                           const std::string& header,
                                                           const TensorSpec& input,
                                                           const TensorSpec& output) {
  const std::string_view rest = body.substr(head);
  std::vector<float> tensor(rest.size() / sizeof(float));
  std::memcpy(tensor.data(), rest.data(), rest.size());
  try {
    return parse_v2_infer(body.substr(0, head), &header, input, output, 4, &tensor).items;
  } catch (const HttpError& e) {
    if (e.status != 400 && e.status != 413) __builtin_trap();
    return std::nullopt;
  }
}

bool same_bits(const std::vector<std::vector<float>>& a, const std::vector<std::vector<float>>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].size() != b[i].size() ||
        std::memcmp(a[i].data(), b[i].data(), a[i].size() * sizeof(float)) != 0)
      return false;
  return true;
}

}  // namespace

int v2_infer(const uint8_t* data, size_t size) {
  std::string_view in = view(data, size);
  size_t eol = in.find('\n');
  if (eol == std::string_view::npos) return 0;
  const std::string header(in.substr(0, eol));
  static const TensorSpec input = v2_input_spec(2, 2);
  static const TensorSpec output = v2_output_spec(12);
  const std::string_view body = in.substr(eol + 1);
  // Split as the transport would: a decimal header length short of the body, whole floats after.
  std::optional<size_t> head;
  if (!header.empty() && header.size() <= 18 &&
      header.find_first_not_of("0123456789") == std::string::npos) {
    const size_t n = std::stoull(header);
    if (n < body.size() && (body.size() - n) % sizeof(float) == 0) head = n;
  }
  std::optional<std::vector<std::vector<float>>> split;
  if (head) split = split_items(body, *head, header, input, output);
  try {
    V2InferRequest r = parse_v2_infer(body, header.empty() ? nullptr : &header,
                                      input, output, 4);
    if (head && (!split || !same_bits(*split, r.items))) __builtin_trap();  // split or not: same
    if (r.items.empty() || r.items.size() > 4) __builtin_trap();  // 1..max_batch items
    for (const auto& item : r.items)
      if (item.size() != 12) __builtin_trap();  // exactly the shape's values, always
    if (r.classification > 12) __builtin_trap();
    TensorSpec out = output;
    out.shape = {static_cast<int64_t>(r.items.size()), 12};
    (void)v2_infer_response("m", r.id, out, r.items[0], r.binary_output).body.size();
    if (r.classification) {
      auto top = v2_top_classes(r.items[0], r.classification, {"a", "b"});
      if (top.size() != r.classification) __builtin_trap();
      (void)v2_bytes_response("m", r.id, out, top, r.binary_output).body.size();
    }
  } catch (const HttpError& e) {
    if (e.status != 400 && e.status != 413) __builtin_trap();
    if (split) __builtin_trap();  // the split body was accepted, the whole one refused
  }
  return 0;
}

int group_definition(const uint8_t* data, size_t size) {
  GroupDefinition d;
  try {
    d = parse_group_definition(view(data, size));
  } catch (const HttpError&) {
    return 0;
  }
  const nlohmann::json j = group_definition_json(d);
  if (group_definition_json(parse_group_definition(j.dump())) != j) std::abort();
  std::vector<MemberAnswer> answers(d.members.size());
  for (size_t k = 0; k < answers.size(); ++k) {
    answers[k].ok = true;
    answers[k].label = d.members[k % 2];
  }
  const MemberMask all = MemberMask((uint64_t(1) << d.members.size()) - 1);
  const HttpResponse r = group_answer(d, all, answers);
  if (r.status != 200 || nlohmann::json::parse(r.body)["voters"].size() != d.members.size())
    std::abort();
  return 0;
}

}  // namespace servelab::fuzz
