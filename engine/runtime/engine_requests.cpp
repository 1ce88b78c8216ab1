// Engine facade, request side: classify (OpenCV preprocessing on the caller's thread) and
// submit_raw, both handing an accepted request to the controller as an arrival.
#include <algorithm>
#include <optional>

#include "engine/runtime/engine_impl.h"
#include "engine/runtime/preprocess.h"

namespace servelab::runtime {

std::unique_ptr<Pending> Engine::Impl::make_pending(std::shared_ptr<const ModelEntry> m,
                                                   std::shared_ptr<const Input> input, int top_k,
                                                   std::function<void(ClassifyResult)> done,
                                                   const RequestOptions& ro) {
  auto p = std::make_unique<Pending>();
  p->request.id = next_request.fetch_add(1);
  p->request.model = m->id;
  p->request.arrival = ro.arrival ? *ro.arrival : clock.now();
  const std::optional<double> slo = ro.slo ? ro.slo : m->spec.slo ? m->spec.slo : opts.slo;
  if (ro.deadline) p->request.deadline = *ro.deadline;
  else if (slo) p->request.deadline = p->request.arrival + *slo;
  p->input = std::move(input);
  p->top_k = top_k;
  p->done = std::move(done);
  p->on_dispatch = ro.on_dispatch;
  p->model = std::move(m);
  return p;
}

int Engine::Impl::accept(std::shared_ptr<const Input> input, int top_k,
                         std::function<void(ClassifyResult)> done,
                         std::shared_ptr<const ModelEntry> m, const RequestOptions& ro,
                         RequestId* id) {
  auto p = make_pending(std::move(m), std::move(input), top_k, std::move(done), ro);
  Request r = p->request;
  {
    std::lock_guard lock(inbox_mu);
    if (stopping) return 503;
  }
  {
    std::lock_guard lock(pending_mu);
    pending.emplace(r.id, std::move(p));
  }
  if (id) *id = r.id;  // before the arrival: `done` may run before this call returns
  // Arrival times come from this thread; the controller sees the event at a later `now`
  // (at once when the control lock is free), so queue time includes any wait for the lock.
  post([this, r](Time now) { ctl->on_arrival(r, now, actions.out()); });
  return 0;
}

bool Engine::Impl::refuse_if_full(const std::shared_ptr<const ModelEntry>& m, int top_k,
                                  std::function<void(ClassifyResult)>& done,
                                  const RequestOptions& ro) {
  const uint32_t bound = opts.control.queue_bound;
  if (bound == 0) return false;
  {
    std::lock_guard lock(inbox_mu);
    if (stopping) return false;  // accept() answers 503
  }
  static const auto no_input = std::make_shared<const Input>();
  auto p = make_pending(m, no_input, top_k, std::move(done), ro);
  const Request r = p->request;
  {
    std::lock_guard lock(pending_mu);
    pending.emplace(r.id, std::move(p));
  }
  // Under the control lock the queue cannot change between the look and the arrival: the
  // controller rejects this image-less request (counted like any rejection) and `done`
  // answers it; otherwise it never reaches the controller.
  bool refused = query([&](Time now) {
    if (ctl->queued(r.model) < bound) return false;
    ctl->on_arrival(r, now, actions.out());
    return true;
  });
  if (!refused) {
    std::lock_guard lock(pending_mu);
    auto it = pending.find(r.id);
    done = std::move(it->second->done);
    pending.erase(it);
  }
  return refused;
}

int Engine::classify(const std::string& model, std::string image_bytes, int top_k,
                     std::function<void(ClassifyResult)> done, const RequestOptions& ro,
                     RequestId* id) {
  Impl& s = *impl_;
  auto m = s.find(model);
  if (!m) return 404;
  if (image_bytes.size() > s.opts.max_image_bytes) return 413;
  try {
    if (s.refuse_if_full(m, top_k, done, ro)) return 0;  // before paying for the decode
  } catch (const std::future_error&) {
    return 503;  // the engine is stopping; `done` is answered by its shutdown
  }
  Input input;
  try {
    ++s.images_decoded;
    input = preprocess_image(image_bytes, m->spec.preprocess, !s.exec->normalizes_on_device());
  } catch (const ImageError&) {
    return 400;
  }
  return s.accept(std::make_shared<const Input>(std::move(input)), top_k, std::move(done),
                  std::move(m), ro, id);
}

namespace {

bool same_preprocess(const Preprocess& a, const Preprocess& b) {
  return a.input_width == b.input_width && a.input_height == b.input_height &&
         a.resize == b.resize && std::equal(a.mean, a.mean + 3, b.mean) &&
         std::equal(a.std, a.std + 3, b.std);
}

// An image decoded for one preprocessing (or found undecodable), shared by the members
// that prepare images alike.
struct Decoded {
  Preprocess pp;
  std::shared_ptr<const Input> input;  // null: the bytes are not a decodable image
};

}  // namespace

std::vector<int> Engine::classify_each(const std::vector<std::string>& models,
                                       std::string image_bytes, int top_k,
                                       std::function<void(size_t, ClassifyResult)> done,
                                       const RequestOptions& ro, std::vector<RequestId>* ids) {
  Impl& s = *impl_;
  std::vector<int> rc(models.size(), 0);
  if (ids) ids->assign(models.size(), 0);
  if (image_bytes.size() > s.opts.max_image_bytes) return std::vector<int>(models.size(), 413);
  std::vector<Decoded> decoded;
  for (size_t k = 0; k < models.size(); ++k) {
    auto m = s.find(models[k]);
    if (!m) {
      rc[k] = 404;
      continue;
    }
    std::function<void(ClassifyResult)> member_done = [done, k](ClassifyResult r) {
      done(k, std::move(r));
    };
    try {
      if (s.refuse_if_full(m, top_k, member_done, ro)) continue;  // before paying for a decode
    } catch (const std::future_error&) {
      rc[k] = 503;  // the engine is stopping
      continue;
    }
    auto it = std::find_if(decoded.begin(), decoded.end(), [&](const Decoded& d) {
      return same_preprocess(d.pp, m->spec.preprocess);
    });
    if (it == decoded.end()) {
      Decoded d{m->spec.preprocess, nullptr};
      try {
        ++s.images_decoded;
        d.input = std::make_shared<const Input>(
            preprocess_image(image_bytes, d.pp, !s.exec->normalizes_on_device()));
      } catch (const ImageError&) {
      }
      it = decoded.insert(decoded.end(), std::move(d));
    }
    if (!it->input) {
      rc[k] = 400;
      continue;
    }
    rc[k] = s.accept(it->input, top_k, std::move(member_done), std::move(m), ro,
                     ids ? &(*ids)[k] : nullptr);
  }
  return rc;
}

int Engine::infer(const std::string& model, std::vector<float> input,
                  std::function<void(ClassifyResult)> done, const RequestOptions& ro,
                  RequestId* id) {
  return impl_->submit_tensor(model, std::move(input), 0, std::move(done), ro, id);
}

void Engine::cancel(RequestId id) {
  Impl& s = *impl_;
  ModelId model = 0;
  {
    std::lock_guard lock(s.pending_mu);
    auto it = s.pending.find(id);
    if (it == s.pending.end()) return;  // answered already, or never accepted
    model = it->second->request.model;
  }
  auto cancel = [&s, id, model](Time now) {
    return s.ctl->cancel(id, model, now, s.actions.out());
  };
  // From a failed request's `done` callback (e.g. a failed item cancelling its siblings; it
  // runs under the lock) at once, so that a batch ending meanwhile does not see its requests
  // still wanted (the enclosing carry_out() carries out the actions); from an Ok answer's
  // (given after the lock is released) posted. A request whose arrival still waits in the
  // inbox is not in the controller yet: the cancel is posted again, to run after that arrival.
  if (s.holds_control() && cancel(s.clock.now())) return;
  s.post([cancel](Time now) { cancel(now); });
}

std::optional<Engine::Tensors> Engine::tensors(const std::string& model) const {
  auto m = impl_->find(model);
  if (!m) return std::nullopt;
  return Tensors{m->spec.preprocess.input_height, m->spec.preprocess.input_width,
                 m->measure.classes};
}

std::vector<std::string> Engine::labels(const std::string& model) const {
  auto m = impl_->find(model);
  return m ? m->spec.labels : std::vector<std::string>{};
}

int Engine::submit_raw(const std::string& model, std::vector<float> input, int top_k,
                       std::function<void(ClassifyResult)> done, const RequestOptions& ro) {
  return impl_->submit_tensor(model, std::move(input), std::max(top_k, 1), std::move(done), ro);
}

int Engine::submit_raw_together(const std::string& model, std::vector<std::vector<float>> inputs,
                                int top_k, std::function<void(size_t, ClassifyResult)> done,
                                const RequestOptions& ro) {
  auto m = impl_->find(model);
  if (!m) return 404;
  const Preprocess& pp = m->spec.preprocess;
  std::vector<std::shared_ptr<const Input>> prepared;
  for (std::vector<float>& in : inputs) {
    auto p = std::make_shared<Input>();
    p->height = pp.input_height;
    p->width = pp.input_width;
    p->chw = std::move(in);
    prepared.push_back(std::move(p));
  }
  std::vector<RequestOptions> options(prepared.size(), ro);
  return submit_together(model, std::move(prepared), std::move(options), top_k, std::move(done));
}

namespace {

// Whether `in` is an input of `pp`'s size in the form the executor takes; an empty input
// only for an executor that accepts one (the profiled executor).
bool fits(const Input& in, const Preprocess& pp, bool accepts_empty) {
  if (in.empty()) return accepts_empty;
  const size_t expected = size_t(3) * pp.input_height * pp.input_width;
  if (in.height != pp.input_height || in.width != pp.input_width) return false;
  return in.chw.empty() ? in.hwc.size() == expected : in.chw.size() == expected;
}

}  // namespace

int Engine::submit_together(const std::string& model,
                            std::vector<std::shared_ptr<const Input>> inputs,
                            std::vector<RequestOptions> options, int top_k,
                            std::function<void(size_t, ClassifyResult)> done,
                            std::vector<RequestId>* ids) {
  Impl& s = *impl_;
  auto m = s.find(model);
  if (!m) return 404;
  if (options.size() != inputs.size()) return 400;
  for (const auto& in : inputs)
    if (!in || !fits(*in, m->spec.preprocess, s.exec->accepts_empty_input())) return 400;
  {
    std::lock_guard lock(s.inbox_mu);
    if (s.stopping) return 503;
  }
  std::vector<Request> requests;
  if (ids) ids->clear();
  for (size_t i = 0; i < inputs.size(); ++i) {
    auto p = s.make_pending(m, inputs[i], std::max(top_k, 1),
                            [done, i](ClassifyResult r) { done(i, std::move(r)); }, options[i]);
    requests.push_back(p->request);
    if (ids) ids->push_back(p->request.id);  // before the arrival: an answer may come at once
    std::lock_guard lock(s.pending_mu);
    s.pending.emplace(p->request.id, std::move(p));
  }
  // One event: the controller queues them all before it decides (Controller::on_arrivals).
  s.post([&s, requests](Time now) { s.ctl->on_arrivals(requests, now, s.actions.out()); });
  return 0;
}

Engine::Prepared Engine::prepare_each(const std::vector<std::string>& models,
                                      const std::string& image_bytes) const {
  const Impl& s = *impl_;
  Prepared out;
  out.rc.assign(models.size(), 0);
  out.inputs.resize(models.size());
  if (image_bytes.size() > s.opts.max_image_bytes) {
    out.rc.assign(models.size(), 413);
    return out;
  }
  std::vector<std::pair<Preprocess, std::shared_ptr<const Input>>> decoded;  // null: undecodable
  for (size_t k = 0; k < models.size(); ++k) {
    auto m = s.find(models[k]);
    if (!m) {
      out.rc[k] = 404;
      continue;
    }
    const Preprocess& pp = m->spec.preprocess;
    auto it = std::find_if(decoded.begin(), decoded.end(),
                           [&](const auto& d) { return same_preprocess(d.first, pp); });
    if (it == decoded.end()) {
      std::shared_ptr<const Input> input;
      try {
        ++s.images_decoded;
        input = std::make_shared<const Input>(
            preprocess_image(image_bytes, pp, !s.exec->normalizes_on_device()));
      } catch (const ImageError&) {
      }
      it = decoded.insert(decoded.end(), {pp, std::move(input)});
    }
    if (!it->second) out.rc[k] = 400;
    else out.inputs[k] = it->second;
  }
  return out;
}

int Engine::Impl::submit_tensor(const std::string& model, std::vector<float> input, int top_k,
                                std::function<void(ClassifyResult)> done,
                                const RequestOptions& ro, RequestId* id) {
  Impl& s = *this;
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
  return s.accept(std::make_shared<const Input>(std::move(in)), top_k, std::move(done),
                  std::move(m), ro, id);
}

}  // namespace servelab::runtime
