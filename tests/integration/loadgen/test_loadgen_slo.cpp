// The load generator's latency objectives: each record carries its model's SLO (else the
// run's), and with send_slo each request carries it to the server in X-SLO-Ms (127.0.0.1).
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "fixed_delay_server.h"
#include "results/records.h"
#include "workloads/loadgen/loadgen.h"
#include "workloads/workload.h"

using namespace servelab;
using loadgen::test::FixedDelayServer;

namespace {

// Closed loop, one client, models 0, 1, 0, 1 in turn.
workloads::Workload alternating(uint64_t requests) {
  workloads::WorkloadSpec spec;
  spec.num_models = 2;
  spec.requests = requests;
  spec.arrival.type = "closed";
  spec.arrival.concurrency = 1;
  spec.access.type = "sequential";
  return workloads::generate(spec);
}

}  // namespace

TEST_CASE("load: records carry their model's SLO and send it in X-SLO-Ms when asked",
          "[loadgen][integration]") {
  FixedDelayServer server(0.02);  // every answer 20 ms after its request
  loadgen::LoadOptions o;
  o.url = server.url();
  o.model_names = {"tight", "loose"};
  o.body = "x";
  o.timeout = 5;
  o.slo = 0.5;                              // the run's, for "loose"
  o.model_slo = {0.0125, std::nullopt};     // "tight": 12.5 ms, below the server's 20
  o.send_slo = true;
  const results::RunRecords r = loadgen::run_load(o, alternating(4));
  REQUIRE(r.requests.size() == 4);
  CHECK(r.requests[0].slo == 0.0125);
  CHECK(r.requests[1].slo == 0.5);
  const std::vector<std::string> sent = server.slo_headers();
  REQUIRE(sent.size() == 4);
  CHECK(sent[0] == "12.5");
  CHECK(sent[1] == "500");
  // Each tight request took >= 20 ms: missed; each loose one met its 500 ms.
  const nlohmann::json s = results::summarize(r);
  CHECK(s["per_model"]["tight"]["overdue"] == 2);
  CHECK(s["per_model"]["loose"]["slo_attainment"].get<double>() == 1.0);
  CHECK(s["slo_attainment"].get<double>() == 0.5);

  // Without send_slo nothing is sent; the records still carry the SLOs.
  o.send_slo = false;
  FixedDelayServer quiet(0.001);
  o.url = quiet.url();
  const results::RunRecords q = loadgen::run_load(o, alternating(2));
  CHECK(q.requests[0].slo == 0.0125);
  for (const std::string& h : quiet.slo_headers()) CHECK(h.empty());
}
