// A real cluster on loopback for real mode of a config with `cluster:` (docs/cluster.md):
// `cluster.servers` `servelab serve` processes, each with the run's engine and policies and
// the models the config's placement gives it, and before them the front end `cluster.front`
// names: `servelab route`'s (in-process) with the config's router, placement and backup
// requests, or nginx or HAProxy as a child process (experiments/proxy_front.h). The load
// generator then sends to url().
// The servers are child processes that the kernel kills when the thread that started them
// ends (PR_SET_PDEATHSIG), so a run that is interrupted or crashes leaves none behind; the
// destructor stops the front end and then the servers (SIGTERM, then SIGKILL after 10 s),
// also when the run failed. Not thread-safe: construct, use and destroy on one thread.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "config/run_config.h"
#include "engine/route/http/forwarder.h"
#include "results/records.h"
#include "workloads/workload.h"

namespace servelab::experiments {

struct RealClusterOptions {
  std::string binary = "/proc/self/exe";  // the servelab executable the servers run
  std::string models_dir;                 // TorchScript files: each server's --model-root
  std::string run_dir;                    // server stores and logs: run_dir/server-K.*
  std::string config_file;                // the run's config: each server's --config
  std::string profile;                    // the models' sizes, for the placement
  std::string proxy_search_path;          // nginx's or haproxy's folders; "": the default
                                          // (proxy_front.h)
  bool verbose = false;
};

class RealCluster {
 public:
  // Starts the servers (each must print its port within 120 s), registers each model on the
  // servers the placement names (its load: its share of `w`'s requests), starts the front
  // end. Throws ExperimentError naming the server or front end that failed, with its
  // stderr's end; a front end whose program is not installed before any server starts.
  RealCluster(const config::RunConfig& rc, const workloads::Workload& w, RealClusterOptions o);
  ~RealCluster();
  RealCluster(const RealCluster&) = delete;
  RealCluster& operator=(const RealCluster&) = delete;

  std::string url() const;            // the front end's
  std::string route_metrics() const;  // servelab route's /metrics text; "" for a proxy
  // servelab route with backups: the rows of the tied requests' copies settled since the last
  // call, once none is unsettled (a losing copy still running) or after `wait_s`.
  route::CopyRows copy_rows(double wait_s = 30) const;
  // servelab route with backups: marks `records` as a run with backups and gives each request
  // its copies' row (RequestRecord's backup fields), found by its X-Servelab-Route-Seq
  // (`route_seq`, by request index: loadgen::LoadStats::route_seq). Nothing otherwise.
  void add_copy_rows(results::RunRecords& records, const std::vector<int64_t>& route_seq) const;
  std::vector<uint16_t> server_ports() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace servelab::experiments
