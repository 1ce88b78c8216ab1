// MLPerf LoadGen's early stopping for a latency percentile: a run of n queries of which t took
// longer than the bound shows, with confidence c, that the share of queries over the bound is
// below 1 - p when a binomial with that share would give t or fewer such queries with
// probability below 1 - c. Pure functions; thread-safe.
#pragma once

#include <cstdint>

namespace servelab::capacity {

// P(X <= overlatency) for X ~ Binomial(queries, 1 - percentile): the chance of seeing this few
// queries over the bound if exactly the allowed share were over it.
double overlatency_odds(uint64_t queries, uint64_t overlatency, double percentile);

// Whether `queries` with `overlatency` of them over the bound pass at `confidence`.
bool early_stopping_passes(uint64_t queries, uint64_t overlatency, double percentile,
                           double confidence);

// The fewest queries (all further ones under the bound) with which `overlatency` over the
// bound would pass; at least `queries`. For 0 over the bound at p99 and c 0.99: 459.
uint64_t queries_needed(uint64_t overlatency, double percentile, double confidence);

}  // namespace servelab::capacity
