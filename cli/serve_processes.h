// `servelab serve --processes N`: N servers forked from one process after LibTorch's
// start-up. Each replica is a whole server of its own (its port, model store and registry);
// what the runtime built before main (its operator tables and relocated data, tens of MB a
// process) stays shared copy-on-write among them, as the weight store shares the weights.
// The first process (the supervisor) serves nothing: a second one prepares what the replicas
// share (the weight store's architectures imported and warmed), forks them and exits, so that
// what only it touched (the import's code and data) is given back and the supervisor stays as
// small as a process that has only started. The supervisor, their parent from then on (a
// subreaper), passes SIGINT and SIGTERM on to the replicas, reports each replica that ends,
// and ends when they all have. A replica ends with SIGTERM when the supervisor dies, however
// it dies.
#pragma once

#include <signal.h>

#include <functional>
#include <string>

namespace servelab::cli {

// What replica `index` (0-based) of `count` changes in the server's options.
struct Replica {
  unsigned index = 0;
  unsigned count = 1;
  // Replica k of a store DIR keeps its models and registry in DIR/replica-k.
  std::string store_dir(const std::string& store) const;
  // PORT + k, or 0 (each picks a free one) for port 0.
  unsigned port(unsigned base) const { return base == 0 ? 0 : base + index; }
};

// Runs `prepare()` in a process of its own that then forks `count` replicas, each running
// `serve(replica)` and exiting with what it returns, and supervises them; returns the exit
// status: 0 when every replica ended with 0 (after SIGINT or SIGTERM), else 1 (also when the
// preparing process failed). `stop_signals` (SIGINT, SIGTERM) must be blocked, and no thread
// started yet, nor left by `prepare`: fork copies only the calling thread.
int run_replicas(unsigned count, const sigset_t& stop_signals, const std::function<void()>& prepare,
                 const std::function<int(const Replica&)>& serve);

}  // namespace servelab::cli
