// A server's front end: what happens to a request between the client's send and the
// controller's queue, and to its answer on the way back. The model is the measured request
// overhead of each model (SimModel::overhead, calibration/terms/front_end_profile.h): the network and
// HTTP parsing take `before - preprocess`, then decoding and preprocessing hold one of the
// server's IO threads (first come first served) for a draw around `preprocess`; the answer
// reaches the client `after` after its batch ends. A closed loop's opening burst can instead
// replay a cold burst the profiler measured (when each request reached the controller). Paper
// profiles have no overheads: requests reach the controller at once. With cluster.cores the
// preprocessing is work on the machine's shared cores (shared_cores.h), not a fixed delay. A
// request that finds its server idle (no request held or on its way in) takes its model's
// measured idle extra longer on the way in (RequestOverhead::idle_extra_after).
// One per simulated server; a part of one run (run_context.h); one thread.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "simulator/run_context.h"

namespace servelab::sim {

class GroupRequests;
class Server;

class FrontEnd {
 public:
  // `io_seed`: the random stream of preprocessing draws (its own, so batch draws do not shift).
  // A request to a model group fans out through `groups` when it reaches the controller.
  FrontEnd(RunContext& ctx, Server& server, GroupRequests& groups, uint64_t io_seed);

  // From now on, request i (i < offsets.size()) reaches the controller at offsets[i] instead
  // of through the IO model: a measured cold burst (calibration/terms/front_end_profile.h).
  void replay_opening(std::vector<Time> offsets) { opening_ = std::move(offsets); }

  // Request `id` arrives from its client at `now`.
  void receive(RequestId id, Time now);
  // When the client has the answer of a request of `model` whose batch ended at `finished`.
  Time answer_time(ModelId model, Time finished) const {
    return answer_delay_ ? finished + ctx_.overhead(model).after : finished;
  }

  // Events.
  void on_parsed(RequestId id, Time now);   // HTTP request read: wants an IO thread
  void on_io_done(RequestId id, Time now);  // preprocessing done: to the controller
  void on_opening(RequestId id, Time now);  // a replayed cold burst's request arrives

 private:
  void start_io(RequestId id, Time now);
  void to_controller(RequestId id, Time now);
  Time idle_for(Time now) const;

  RunContext& ctx_;
  Server& server_;
  GroupRequests& groups_;
  std::mt19937_64 io_rng_;
  uint32_t io_busy_ = 0;              // IO threads preprocessing a request
  std::vector<RequestId> io_queue_;   // requests waiting for one, FIFO from io_next_
  size_t io_next_ = 0;
  std::vector<Time> opening_;
  uint32_t in_intake_ = 0;  // received, not yet at the controller
  Time last_intake_ = 0;    // when the last one reached it
  // Whether some target's requests take time on the way in (before) and the answer's way
  // back (after); where none does, no request looks its overhead up.
  const bool parse_delay_;
  const bool answer_delay_;
};

}  // namespace servelab::sim
