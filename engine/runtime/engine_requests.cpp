// Engine facade, request side: classify (OpenCV preprocessing on the caller's thread) and
// submit_raw, both handing an accepted request to the control thread as an arrival.
#include "engine/runtime/engine_impl.h"
#include "engine/runtime/preprocess.h"

namespace servelab::runtime {

int Engine::Impl::accept(const std::string& model, Input input, int top_k,
                         std::function<void(ClassifyResult)> done,
                         std::shared_ptr<const ModelEntry> m) {
  auto p = std::make_unique<Pending>();
  p->request.id = next_request.fetch_add(1);
  p->request.model = m->id;
  p->request.arrival = clock.now();
  p->input = std::move(input);
  p->top_k = top_k;
  p->done = std::move(done);
  p->model = std::move(m);
  Request r = p->request;
  {
    std::lock_guard lock(inbox_mu);
    if (stopping) return 503;
  }
  {
    std::lock_guard lock(pending_mu);
    pending.emplace(r.id, std::move(p));
  }
  // Arrival times come from this thread; the control thread processes the event at a
  // later `now`, so queue time includes the hand-off.
  post([this, r](Time now) { ctl->on_arrival(r, now, out); });
  return 0;
}

int Engine::classify(const std::string& model, std::string image_bytes, int top_k,
                     std::function<void(ClassifyResult)> done) {
  Impl& s = *impl_;
  auto m = s.find(model);
  if (!m) return 404;
  if (image_bytes.size() > s.opts.max_image_bytes) return 400;
  Input input;
  try {
    input = preprocess_image(image_bytes, m->spec.preprocess, !s.exec->normalizes_on_device());
  } catch (const ImageError&) {
    return 400;
  }
  return s.accept(model, std::move(input), top_k, std::move(done), std::move(m));
}

int Engine::submit_raw(const std::string& model, std::vector<float> input, int top_k,
                       std::function<void(ClassifyResult)> done) {
  Impl& s = *impl_;
  auto m = s.find(model);
  if (!m) return 404;
  const Preprocess& pp = m->spec.preprocess;
  Input in;
  in.channels = 3;
  in.height = pp.input_height;
  in.width = pp.input_width;
  size_t expected = static_cast<size_t>(3) * pp.input_height * pp.input_width;
  if (input.size() != expected && !(input.empty() && s.exec->accepts_empty_input())) return 400;
  in.chw = std::move(input);
  return s.accept(model, std::move(in), top_k, std::move(done), std::move(m));
}

}  // namespace servelab::runtime
