// The KServe v2 / Triton protocol endpoints of HttpServer (the request and response forms are
// in v2_protocol.h):
//   GET  /v2                                  server metadata
//   GET  /v2/health/live, /v2/health/ready    200 while the server serves
//   GET  /v2/models/{name}[/versions/1]       model metadata (input and output tensors)
//   GET  /v2/models/{name}[/versions/1]/ready 200 for a registered model
//   POST /v2/models/{name}[/versions/1]/infer a tensor in, the output row out
// Models have one version, "1". Errors are {"error": "..."} with their status.
#include <nlohmann/json.hpp>

#include "engine/server/server_impl.h"
#include "engine/server/v2_protocol.h"

namespace servelab::server {
using nlohmann::json;

namespace {

// Runs `work` and replies with its response, or with the HttpError it throws.
template <class Work>
void answer(const Reply& reply, Work&& work) {
  try {
    reply(work());
  } catch (const HttpError& e) {
    reply(error_response(e.status, e.what()));
  } catch (const std::exception& e) {
    reply(error_response(500, std::string("internal error: ") + e.what()));
  }
}

void check_version(const PathParams& p) {
  auto it = p.find("version");
  if (it != p.end() && it->second != "1")
    throw HttpError(404, "model '" + p.at("name") + "' has no version '" + it->second +
                             "' (its only version is 1)");
}

// Registers `handler` for `pattern` and for the same path with "/versions/{version}".
template <class Handler>
void both(Router& router, const std::string& method, const std::string& tail, Handler handler) {
  router.add(method, "/v2/models/{name}" + tail, handler);
  router.add(method, "/v2/models/{name}/versions/{version}" + tail, handler);
}

}  // namespace

void HttpServer::Impl::add_v2_routes() {
  router.add("GET", "/v2", [](HttpRequest&, const PathParams&, Reply reply) {
    json j = {{"name", "servelab"}, {"version", "1"}, {"extensions", {"binary_tensor_data"}}};
    reply(json_response(200, j.dump()));
  });
  router.add("GET", "/v2/health/live", [](HttpRequest&, const PathParams&, Reply reply) {
    reply(json_response(200, R"({"live":true})"));
  });
  router.add("GET", "/v2/health/ready", [](HttpRequest&, const PathParams&, Reply reply) {
    reply(json_response(200, R"({"ready":true})"));
  });
  // The model's tensors; throws HttpError 400 (bad name), 404 (unknown), 503 (unavailable).
  auto tensors_of = [this](const PathParams& p) {
    const std::string& name = p.at("name");
    check_name(name);
    check_version(p);
    if (auto t = engine->tensors(name)) return *t;
    {
      std::lock_guard<std::mutex> lock(unavailable_mu);
      auto it = unavailable.find(name);
      if (it != unavailable.end())
        throw HttpError(503, "model '" + name + "' is unavailable: " + it->second);
    }
    throw HttpError(404, "unknown model '" + name + "'");
  };
  both(router, "GET", "", [tensors_of](HttpRequest&, const PathParams& p, Reply reply) {
    answer(reply, [&] {
      auto t = tensors_of(p);
      return v2_metadata_response(p.at("name"), v2_input_spec(t.height, t.width),
                                  v2_output_spec(t.classes));
    });
  });
  both(router, "GET", "/ready", [tensors_of](HttpRequest&, const PathParams& p, Reply reply) {
    answer(reply, [&] {
      tensors_of(p);
      json j = {{"name", p.at("name")}, {"ready", true}};
      return json_response(200, j.dump());
    });
  });
  both(router, "POST", "/infer", [this, tensors_of](HttpRequest& req, const PathParams& p,
                                                    Reply reply) {
    answer(reply, [&] { return infer_v2(req, p.at("name"), tensors_of(p), reply); });
  });
}

HttpResponse HttpServer::Impl::infer_v2(HttpRequest& req, const std::string& name,
                                        const runtime::Engine::Tensors& t, const Reply& reply) {
  const TensorSpec in = v2_input_spec(t.height, t.width);
  V2InferRequest r = parse_v2_infer(req.body, req.header("inference-header-content-length"),
                                    in, v2_output_spec(t.classes).name);
  runtime::RequestOptions ro = parse_slo_header(req);
  if (r.slo_ms) ro.slo = *r.slo_ms / 1e3;  // the v2 parameter wins over the header
  int rc = engine->infer(
      name, std::move(r.input),
      [this, reply, name, id = std::move(r.id), binary = r.binary_output](
          runtime::ClassifyResult res) {
        if (res.status == RequestStatus::Failed && removed(name))
          return reply(error_response(404, "model '" + name + "' was removed"));
        if (auto failure = request_failure(name, res)) return reply(std::move(*failure));
        TensorSpec out = v2_output_spec(0);
        out.shape = {1, static_cast<int64_t>(res.output.size())};
        reply(v2_infer_response(name, id, out, res.output, binary));
      },
      ro);
  if (rc == 404) throw HttpError(404, "unknown model '" + name + "'");
  if (rc != 0) throw HttpError(rc, "model '" + name + "' cannot take this request now");
  HttpResponse later;  // answered from an engine thread
  later.status = -1;
  return later;
}

}  // namespace servelab::server
