#include "simulator/front_end.h"

#include <algorithm>

#include "simulator/group_requests.h"
#include "simulator/server.h"
#include "simulator/shared_cores.h"

namespace servelab::sim {

FrontEnd::FrontEnd(RunContext& ctx, Server& server, GroupRequests& groups, uint64_t io_seed)
    : ctx_(ctx), server_(server), groups_(groups), io_rng_(io_seed),
      parse_delay_(ctx.any_overhead(&RequestOverhead::before)),
      answer_delay_(ctx.any_overhead(&RequestOverhead::after)) {}

void FrontEnd::receive(RequestId id, Time now) {
  ++in_intake_;
  if (id < opening_.size()) {  // the IO side's part is in the measured intake
    ++ctx_.in_flight;
    ctx_.sim.schedule<&FrontEnd::on_opening>(std::max(now, opening_[id]), this, id);
    return;
  }
  if (parse_delay_) {
    const RequestOverhead& o = ctx_.overhead(ctx_.model_of(id));
    if (o.before > 0) {
      ++ctx_.in_flight;
      const Time way_in = o.before - o.preprocess + o.idle_extra_after(idle_for(now));
      ctx_.sim.schedule<&FrontEnd::on_parsed>(now + way_in, this, id);
      return;
    }
  }
  to_controller(id, now);
}

void FrontEnd::on_parsed(RequestId id, Time now) {
  if (io_busy_ < std::max(1u, ctx_.setup.io_threads)) start_io(id, now);
  else io_queue_.push_back(id);
}

void FrontEnd::start_io(RequestId id, Time now) {
  ++io_busy_;
  const RequestOverhead& o = ctx_.overhead(ctx_.model_of(id));
  const Time work = o.sample_preprocess(ctx_.setup.noise, io_rng_);
  // On a machine's shared cores the decoding competes with the batches (and other servers'
  // decoding) for them; else the IO thread has a core of its own.
  if (ctx_.cores) ctx_.cores->start_io(*this, id, work, now);
  else ctx_.sim.schedule<&FrontEnd::on_io_done>(now + work, this, id);
}

void FrontEnd::on_io_done(RequestId id, Time now) {
  --ctx_.in_flight;
  --io_busy_;
  if (io_next_ < io_queue_.size()) start_io(io_queue_[io_next_++], now);
  to_controller(id, now);
}

void FrontEnd::on_opening(RequestId id, Time now) {
  --ctx_.in_flight;
  to_controller(id, now);
}

// How long the server had held no request, none on its way in included, when the request now
// received (already counted in in_intake_) reached it; 0 if it held one.
Time FrontEnd::idle_for(Time now) const {
  if (in_intake_ > 1 || server_.outstanding() > 0) return 0;
  return std::max<Time>(0, now - std::max(server_.emptied_at(), last_intake_));
}

void FrontEnd::to_controller(RequestId id, Time now) {
  --in_intake_;
  last_intake_ = now;
  // A request its client gave up on has a final record: it keeps what was known then.
  if (ctx_.window.state(id) == RunContext::Open) ctx_.window.at(id).queued = now;
  if (ctx_.is_group(ctx_.model_of(id))) groups_.fan_out(id, server_, now);
  else server_.arrive(id, now);
}

}  // namespace servelab::sim
