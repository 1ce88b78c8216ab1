// Bursty open-loop arrival processes (private to servelab_workloads): gamma-distributed gaps
// and a Markov-modulated Poisson process (MMPP), as production inference traces show them
// (bursts over a base rate). Registered in arrival_registry (arrivals.cpp); their draws are
// our own code over Rng (random.h), so a seed gives the same schedule everywhere.
#pragma once

#include <cstdint>
#include <memory>

#include "workloads/streams.h"
#include "workloads/workload.h"

namespace servelab::workloads::detail {

// The most states an MMPP may have (the lists are bounded before anything is drawn).
inline constexpr size_t kMaxMmppStates = 64;

// gamma: gaps Gamma(shape 1/cv^2, mean 1/rate), drawn by Marsaglia and Tsang's method (for a
// shape below 1, a draw at shape + 1 times U^(1/shape)). cv 1 gives exponential gaps (Poisson
// in law, not draw for draw), cv > 1 bursts, cv < 1 a steadier stream than Poisson.
void validate_gamma(const ArrivalSpec& spec);
std::unique_ptr<TimeStream> gamma_stream(const ArrivalSpec& spec, uint64_t max_requests,
                                         double duration);

// mmpp: in state i, Poisson arrivals at state_rates[i] (0 allowed: a silent state) for an
// exponential sojourn of mean state_dwell[i]; then one of the other states, uniformly. The
// long-run rate is sum(rate_i * dwell_i) / sum(dwell_i) (each state is entered equally often).
void validate_mmpp(const ArrivalSpec& spec);
std::unique_ptr<TimeStream> mmpp_stream(const ArrivalSpec& spec, uint64_t max_requests,
                                        double duration);
double mmpp_peak_rate(const ArrivalSpec& spec);

}  // namespace servelab::workloads::detail
