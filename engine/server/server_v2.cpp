// The KServe v2 / Triton protocol endpoints of HttpServer (the request and response forms are
// in v2_protocol.h):
//   GET  /v2                                  server metadata
//   GET  /v2/health/live, /v2/health/ready    200 while the server serves
//   GET  /v2/models/{name}[/versions/1]       model metadata (input and output tensors)
//   GET  /v2/models/{name}[/versions/1]/ready 200 for a registered model
//   GET  /v2/models/{name}[/versions/1]/config the model configuration (Triton's form)
//   POST /v2/models/{name}[/versions/1]/infer a batch of N tensors in, N output rows out
// Models have one version, "1". Errors are {"error": "..."} with their status.
// A batch is served as N engine requests (so batching policies see each item) whose answers
// are gathered in request order; the first item to fail answers the whole request.
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>

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
void both(RouteTable& routes, const std::string& method, const std::string& tail, Handler handler) {
  routes.add(method, "/v2/models/{name}" + tail, handler);
  routes.add(method, "/v2/models/{name}/versions/{version}" + tail, handler);
}

// The items of one v2 infer request in flight, shared by their engine callbacks (any engine
// thread). Exactly one answer is sent: the first failure, or the gathered rows after the last
// item; whoever claims `answered` first sends it.
struct V2Batch {
  std::string model, id;
  bool binary = false;
  uint32_t classification = 0;
  Reply reply;
  std::mutex mu;
  std::vector<std::vector<float>> rows;  // one output row per item, in request order
  std::vector<RequestId> ids;   // the engine requests of the items queued so far
  size_t remaining = 0;                  // items not answered yet
  bool answered = false;

  // True for the one caller that may answer (the first); later callers must not reply.
  bool claim() {
    std::lock_guard<std::mutex> lock(mu);
    return !std::exchange(answered, true);
  }
  // Stores item i's row; true when it was the last one and the caller must answer.
  bool store(size_t i, std::vector<float> row) {
    std::lock_guard<std::mutex> lock(mu);
    if (answered) return false;
    rows[i] = std::move(row);
    if (--remaining > 0) return false;
    answered = true;
    return true;
  }
  bool is_answered() {
    std::lock_guard<std::mutex> lock(mu);
    return answered;
  }
  // Records an item's engine request; false when the batch was answered meanwhile (a failed
  // item), and then the caller cancels it.
  bool add_id(RequestId id) {
    std::lock_guard<std::mutex> lock(mu);
    ids.push_back(id);
    return !answered;
  }
  // The items queued so far, once the batch failed: their answers are no longer wanted.
  std::vector<RequestId> queued_ids() {
    std::lock_guard<std::mutex> lock(mu);
    return ids;
  }
};

// The answer of a batch whose every item is stored: FP32 [N, classes] or, with the
// classification extension, BYTES [N, K]. `labels`: the model's, possibly empty.
HttpResponse batch_response(const V2Batch& b, const std::vector<std::string>& labels) {
  const size_t width = b.rows[0].size();
  for (const auto& row : b.rows)
    if (row.size() != width)
      throw HttpError(500, "model '" + b.model + "' gave output rows of different sizes");
  const auto n = static_cast<int64_t>(b.rows.size());
  TensorSpec out = v2_output_spec(0);
  if (b.classification == 0) {
    std::vector<float> values;
    values.reserve(b.rows.size() * width);
    for (const auto& row : b.rows) values.insert(values.end(), row.begin(), row.end());
    out.shape = {n, static_cast<int64_t>(width)};
    return v2_infer_response(b.model, b.id, out, values, b.binary);
  }
  if (b.classification > width)
    throw HttpError(400, "parameter \"classification\" " + std::to_string(b.classification) +
                             " is more than the " + std::to_string(width) +
                             " scores of model '" + b.model + "'");
  std::vector<std::string> strings;
  strings.reserve(b.rows.size() * b.classification);
  for (const auto& row : b.rows)
    for (std::string& s : v2_top_classes(row, b.classification, labels))
      strings.push_back(std::move(s));
  out.datatype = "BYTES";
  out.shape = {n, static_cast<int64_t>(b.classification)};
  return v2_bytes_response(b.model, b.id, out, strings, b.binary);
}

}  // namespace

void HttpServer::Impl::add_v2_routes() {
  routes.add("GET", "/v2", [](HttpRequest&, const PathParams&, Reply reply) {
    json j = {{"name", "servelab"}, {"version", "1"}, {"extensions", {"binary_tensor_data", "classification"}}};
    reply(json_response(200, j.dump()));
  });
  routes.add("GET", "/v2/health/live", [](HttpRequest&, const PathParams&, Reply reply) {
    reply(json_response(200, R"({"live":true})"));
  });
  routes.add("GET", "/v2/health/ready", [](HttpRequest&, const PathParams&, Reply reply) {
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
  both(routes, "GET", "", [tensors_of](HttpRequest&, const PathParams& p, Reply reply) {
    answer(reply, [&] {
      auto t = tensors_of(p);
      return v2_metadata_response(p.at("name"), v2_input_spec(t.height, t.width),
                                  v2_output_spec(t.classes));
    });
  });
  both(routes, "GET", "/config", [this, tensors_of](HttpRequest&, const PathParams& p,
                                                     Reply reply) {
    answer(reply, [&] {
      auto t = tensors_of(p);
      return v2_config_response(p.at("name"), v2_input_spec(t.height, t.width),
                                v2_output_spec(t.classes), options.v2_max_batch);
    });
  });
  both(routes, "GET", "/ready", [tensors_of](HttpRequest&, const PathParams& p, Reply reply) {
    answer(reply, [&] {
      tensors_of(p);
      json j = {{"name", p.at("name")}, {"ready", true}};
      return json_response(200, j.dump());
    });
  });
  both(routes, "POST", "/infer", [this, tensors_of](HttpRequest& req, const PathParams& p,
                                                    Reply reply) {
    Tracked t;
    try {
      t = track_request(req, reply);
    } catch (const HttpError& e) {
      return reply(error_response(e.status, e.what()));
    }
    answer(t.reply, [&] { return infer_v2(req, p.at("name"), tensors_of(p), t); });
  });
}

HttpResponse HttpServer::Impl::infer_v2(HttpRequest& req, const std::string& name,
                                        const runtime::Engine::Tensors& t,
                                        const Tracked& tracked) {
  V2InferRequest r = parse_v2_infer(req.body, req.header("inference-header-content-length"),
                                    v2_input_spec(t.height, t.width), v2_output_spec(t.classes),
                                    options.v2_max_batch,
                                    req.tensor_split ? &req.tensor : nullptr);
  runtime::RequestOptions ro = parse_slo_header(req);
  if (r.slo_ms) ro.slo = *r.slo_ms / 1e3;  // the v2 parameter wins over the header
  ro.on_dispatch = tracked.on_dispatch;  // any item's dispatch starts the request
  auto batch = std::make_shared<V2Batch>();
  batch->model = name;
  batch->id = std::move(r.id);
  batch->binary = r.binary_output;
  batch->classification = r.classification;
  batch->reply = tracked.reply;
  batch->rows.resize(r.items.size());
  batch->remaining = r.items.size();
  // A client gone, or a cancel of its X-Request-Id, takes its queued items with it before
  // they run, and discards the running ones' results.
  auto drop = [this, batch](const char* why) {
    if (!batch->claim()) return;
    batch->reply(error_response(499, why));
    for (RequestId id : batch->queued_ids()) engine->cancel(id);
  };
  if (req.client) req.client->on_gone([drop] { drop("the client closed the connection"); });
  for (size_t i = 0; i < r.items.size(); ++i) {
    if (batch->is_answered()) break;  // an item failed already: queue no more
    RequestId item_id = 0;
    int rc = engine->infer(
        name, std::move(r.items[i]),
        [this, batch, i](runtime::ClassifyResult res) {
          const std::string& name = batch->model;
          std::optional<HttpResponse> failure;
          if (res.status == RequestStatus::Failed && removed(name))
            failure = error_response(404, "model '" + name + "' was removed");
          else
            failure = request_failure(name, res);
          if (failure) {
            if (!batch->claim()) return;
            batch->reply(std::move(*failure));
            for (RequestId other : batch->queued_ids()) engine->cancel(other);
            return;
          }
          if (!batch->store(i, std::move(res.output))) return;
          answer(batch->reply, [&] {
            return batch_response(
                *batch, batch->classification ? engine->labels(name) : std::vector<std::string>{});
          });
        },
        ro, &item_id);
    if (rc == 0) {
      if (!batch->add_id(item_id)) engine->cancel(item_id);
      continue;
    }
    if (!batch->claim()) break;  // a queued item failed and answered already
    if (rc == 404) throw HttpError(404, "unknown model '" + name + "'");
    throw HttpError(rc, "model '" + name + "' cannot take this request now");
  }
  if (tracked.entry) {
    tracked.entry->set_cancel([drop, id = tracked.id] {
      drop(("request '" + id + "' was cancelled (DELETE /requests/{id})").c_str());
    });
  }
  HttpResponse later;  // answered from an engine thread
  later.status = -1;
  return later;
}

}  // namespace servelab::server
