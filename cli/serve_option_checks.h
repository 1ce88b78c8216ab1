// Checks of `servelab serve`'s command-line values: every number in its range, stated in the
// message as the user wrote it. Each throws ConfigError with a user-facing message.
#pragma once

#include <boost/program_options.hpp>
#include <iomanip>
#include <sstream>

#include "config/bounds.h"
#include "engine/control/policy_params.h"

namespace servelab::cli {

// Throws ConfigError unless lo <= v <= hi (and v is a number): every numeric option has a
// range.
template <class T>
void check_range(const char* option, T v, T lo, T hi) {
  if (v >= lo && v <= hi) return;  // false for NaN
  std::ostringstream msg;
  msg << std::setprecision(12) << "--" << option << " must be between " << lo << " and " << hi
      << " (got " << v << ")";
  throw ConfigError(msg.str());
}

template <class T>
void check_range(const char* option, T v, config::Range<T> r) {
  check_range(option, v, r.lo, r.hi);
}

// Refuses a negative value given to an option of an unsigned type (Boost would wrap it).
void refuse_negative_unsigned(const boost::program_options::parsed_options& parsed);

// The engine settings given on the command line, in the ranges a config file has
// (config/bounds.h); a config file's values were checked where it was read, with its line.
void check_engine_options(const boost::program_options::variables_map& vm);

}  // namespace servelab::cli
